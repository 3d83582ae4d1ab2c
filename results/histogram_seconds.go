package results

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// SchemaSecondsHistogram is the schema named on the first line of latency-seconds.hdr.
const SchemaSecondsHistogram = "ratelab.hdr-seconds/v1"

// secondsHeader is the first line of latency-seconds.hdr: schema, then the geometry every line's
// histogram has, so a reader can refuse a file it would misread.
var secondsHeader = fmt.Sprintf("#%s unit=%s lowest=%d highest=%d digits=%d encoding=%s",
	SchemaSecondsHistogram, histogramUnit, LowestLatencyUs, maxLatencyUs, SignificantDigits, histogramEncoding)

// maxSecondsLine bounds one line of latency-seconds.hdr; an encoded second is a few KB.
const maxSecondsLine = 4 << 20

// ReadSecondsHistograms reads latency-seconds.hdr into a map from second to histogram. A file
// of another schema or geometry is refused (ErrSchema, ErrCorrupt); a last line without its end
// (an interrupted write) returns the seconds read so far with ErrTruncated.
func ReadSecondsHistograms(r io.Reader) (map[int]*Histogram, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	out := map[int]*Histogram{}
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			if n == 1 {
				return nil, fmt.Errorf("%s: empty file, no header: %w", SecondsHistogramFile, ErrTruncated)
			}
			return out, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return out, fmt.Errorf("%s line %d: %w", SecondsHistogramFile, n, err)
		}
		if len(line) > maxSecondsLine {
			return out, fmt.Errorf("%s line %d: longer than %d bytes: %w", SecondsHistogramFile, n, maxSecondsLine, ErrCorrupt)
		}
		if err != nil { // io.EOF after a partial line
			return out, fmt.Errorf("%s line %d: no end of line, cut short by an interrupted write: %w", SecondsHistogramFile, n, ErrTruncated)
		}
		line = strings.TrimSuffix(line, "\n")
		if n == 1 {
			if !strings.HasPrefix(line, "#"+SchemaSecondsHistogram+" ") {
				return nil, fmt.Errorf("%s line 1: %.60q is not a %s header: %w", SecondsHistogramFile, line, SchemaSecondsHistogram, ErrSchema)
			}
			if line != secondsHeader {
				return nil, fmt.Errorf("%s line 1: geometry %q; this ratelab reads %q: %w", SecondsHistogramFile, line, secondsHeader, ErrCorrupt)
			}
			continue
		}
		if line == "" {
			continue
		}
		sec, h, err := parseSecondsLine(line)
		if err != nil {
			return out, fmt.Errorf("%s line %d: %w", SecondsHistogramFile, n, err)
		}
		if prev, ok := out[sec]; ok {
			prev.Merge(h) // a second written twice (late decisions) adds up
			continue
		}
		out[sec] = h
	}
}

func parseSecondsLine(line string) (int, *Histogram, error) {
	f := strings.Fields(line)
	if len(f) != 4 {
		return 0, nil, fmt.Errorf("%d fields, want 4 (t_s count clamped histogram): %w", len(f), ErrCorrupt)
	}
	sec, err1 := strconv.Atoi(f[0])
	count, err2 := strconv.ParseInt(f[1], 10, 64)
	clamped, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || sec < 0 || count < 0 || clamped < 0 {
		return 0, nil, fmt.Errorf("t_s, count and clamped must be counts >= 0, got %q %q %q: %w", f[0], f[1], f[2], ErrCorrupt)
	}
	hh, err := hdrhistogram.Decode([]byte(f[3]))
	if err != nil {
		return 0, nil, fmt.Errorf("second %d: histogram: %v: %w", sec, err, ErrCorrupt)
	}
	if hh.LowestTrackableValue() != LowestLatencyUs || hh.HighestTrackableValue() != maxLatencyUs ||
		hh.SignificantFigures() != SignificantDigits {
		return 0, nil, fmt.Errorf("second %d: encoded geometry differs from the header's: %w", sec, ErrCorrupt)
	}
	if hh.TotalCount() != count {
		return 0, nil, fmt.Errorf("second %d: encoded count %d, line says %d: %w", sec, hh.TotalCount(), count, ErrCorrupt)
	}
	return sec, &Histogram{h: hh, clamped: clamped}, nil
}
