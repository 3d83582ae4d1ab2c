package results

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// maxLogLine bounds one line of latency.hlog; an encoded second is a few KB.
const maxLogLine = 4 << 20

// logUnitNote is latency.hlog's comment on its units. The values are the Histogram's
// microseconds. The Interval_Max column is the interval's max divided by the library writer's
// max-value-unit ratio, fixed at 1,000,000 (HistogramLogOptions has no exported way to choose
// another), so for microseconds it reads in seconds.
const logUnitNote = "[ratelab latency.hlog: one interval per second of the load, t_s 0 at StartTime; " +
	"values in microseconds (HistogramLogProcessor -outputValueUnitRatio 1000 prints ms); " +
	"Interval_Max in seconds; served requests only (decided; errors and drops are in none), " +
	"the counts in the comment before each interval; latency over offered requests is summary.json's latency_ms]"

// RequestCounts are the counts a latency file states beside its histograms. A histogram holds
// the served (decided) requests only: a dropped request and one that ended in an error got no
// decision to time. Offered = Served + Failed + Dropped.
type RequestCounts struct {
	// Offered is the number of requests the schedule offered.
	Offered int64
	// Served is the number decided (allowed or denied, a fail policy's answer included): the
	// histogram's count.
	Served int64
	// Dropped is the number of offered requests never sent, in no histogram.
	Dropped int64
	// Failed is the number of requests that ended in an error (no decision), in no histogram.
	Failed int64
}

// String is c as the files write it: "offered=N served=N dropped=N failed=N".
func (c RequestCounts) String() string {
	return fmt.Sprintf("offered=%d served=%d dropped=%d failed=%d", c.Offered, c.Served, c.Dropped, c.Failed)
}

// RunCounts returns a whole run's counts: offered and dropped from its summary, failed from its
// outcomes' errors, served from its whole-run histogram.
func RunCounts(sum *Summary, h *Histogram) RequestCounts {
	return RequestCounts{Offered: sum.Load.Offered, Served: h.Count(), Dropped: sum.Load.Dropped, Failed: sum.Outcomes.Errors}
}

// LatencyLogWriter writes latency.hlog: the per-second latency histograms as an HdrHistogram
// interval log (format 1.3), through hdrhistogram-go's log writer, so that HdrHistogram's tools
// (HistogramLogProcessor, HistogramLogAnalyzer) read it. Interval i starts at the run's start
// plus i seconds, in absolute seconds since the epoch (BaseTime 0), and lasts 1 s. Before each
// interval a comment line gives that second's counts (see RequestCounts); HdrHistogram's readers
// skip comment lines. Each second goes out in one Write, so an interrupted run keeps every
// second written so far. Not safe for concurrent use.
type LatencyLogWriter struct {
	w       io.Writer
	buf     bytes.Buffer // the library writer writes here; Write hands it on in one call
	lw      *hdrhistogram.HistogramLogWriter
	startMs int64
	served  int64 // the intervals' served counts so far
}

// NewLatencyLogWriter writes latency.hlog's header to w: the format version, the start (t_s 0)
// of the run, the base time 0 (timestamps are absolute), the units and the legend.
func NewLatencyLogWriter(w io.Writer, start time.Time) (*LatencyLogWriter, error) {
	l := &LatencyLogWriter{w: w, startMs: start.UnixMilli()}
	l.lw = hdrhistogram.NewHistogramLogWriter(&l.buf)
	// hdrhistogram-go's OutputStartTime and OutputBaseTime write whole seconds, dropping the
	// start's milliseconds, and the .NET reader matches these lines only with 1 to 3 decimals:
	// both are written here in the Java writer's form, "%.3f (seconds since epoch)", which every
	// reader parses.
	err := errors.Join(
		l.lw.OutputLogFormatVersion(),
		l.lw.OutputComment(fmt.Sprintf("[StartTime: %.3f (seconds since epoch), %s]",
			float64(l.startMs)/1000, time.UnixMilli(l.startMs).UTC().Format(TimeLayout))),
		l.lw.OutputComment("[BaseTime: 0.000 (seconds since epoch)]"),
		l.lw.OutputComment(logUnitNote),
		l.lw.OutputLegend(),
	)
	if err == nil {
		err = l.flush()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: write header: %w", LatencyLogFile, err)
	}
	return l, nil
}

// Write appends second sec's histogram h, after a comment with its counts c. h's start and end
// timestamps are set for the library's writer and restored after.
func (l *LatencyLogWriter) Write(sec int, h *Histogram, c RequestCounts) error {
	if sec < 0 {
		return fmt.Errorf("%s: second %d: must be >= 0: %w", LatencyLogFile, sec, ErrInvalid)
	}
	hh := h.h
	oldStart, oldEnd := hh.StartTimeMs(), hh.EndTimeMs()
	defer func() { hh.SetStartTimeMs(oldStart); hh.SetEndTimeMs(oldEnd) }()
	begin := l.startMs + int64(sec)*1000
	hh.SetStartTimeMs(begin)
	hh.SetEndTimeMs(begin + 1000)
	l.buf.Reset()
	err := l.lw.OutputComment(fmt.Sprintf("[t_s=%d %s]", sec, c))
	if err == nil {
		err = l.lw.OutputIntervalHistogram(hh)
	}
	if err == nil {
		err = l.flush()
	}
	if err != nil {
		return fmt.Errorf("%s: second %d: %w", LatencyLogFile, sec, err)
	}
	l.served += hh.TotalCount()
	return nil
}

// End appends a comment with the run's totals and how many served requests are in no interval:
// those answered after their second was written (late decisions), which only the whole-run
// histogram (latency.hgrm, latency.hdr.json) holds.
func (l *LatencyLogWriter) End(total RequestCounts) error {
	l.buf.Reset()
	err := l.lw.OutputComment(fmt.Sprintf("[run %s; served in the intervals above %d, answered after their second was written %d]",
		total, l.served, max(total.Served-l.served, 0)))
	if err == nil {
		err = l.flush()
	}
	if err != nil {
		return fmt.Errorf("%s: totals: %w", LatencyLogFile, err)
	}
	return nil
}

func (l *LatencyLogWriter) flush() error {
	if _, err := l.w.Write(l.buf.Bytes()); err != nil {
		return err
	}
	if f, ok := l.w.(flusher); ok {
		return f.Flush()
	}
	return nil
}

// LatencyLog is latency.hlog read back.
type LatencyLog struct {
	// Start is the run's start (t_s 0), from the StartTime line, to the millisecond.
	Start time.Time
	// Seconds holds each second's histogram by its t_s.
	Seconds map[int]*Histogram
}

// ReadLatencyLog reads latency.hlog with hdrhistogram-go's log reader and files each interval
// under its second, (interval start - StartTime) in whole seconds. A log without a StartTime
// line, with an interval off the second boundaries, of another geometry or with a line the
// library cannot decode is refused (ErrCorrupt); a last line without its end (an interrupted
// write) returns the seconds read so far with ErrTruncated. Tagged intervals (another stream,
// not ratelab's) are skipped, as HistogramLogProcessor skips them without -tag.
func ReadLatencyLog(r io.Reader) (*LatencyLog, error) {
	lines := &logLines{br: bufio.NewReaderSize(r, 64<<10)}
	lr := hdrhistogram.NewHistogramLogReader(lines)
	type stamped struct {
		startMs int64
		h       *hdrhistogram.Histogram
	}
	var read []stamped
	for {
		hh, err := lr.NextIntervalHistogram()
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				return nil, err
			}
			return nil, fmt.Errorf("%s interval %d: %v: %w", LatencyLogFile, len(read)+1, err, ErrCorrupt)
		}
		if hh == nil {
			break
		}
		if hh.Tag() == "" {
			read = append(read, stamped{hh.StartTimeMs(), hh})
		}
	}
	if !lines.sawStart {
		if lines.n == 0 {
			return nil, fmt.Errorf("%s: empty file, no header: %w", LatencyLogFile, ErrTruncated)
		}
		return nil, fmt.Errorf("%s: no StartTime line: not a ratelab latency log: %w", LatencyLogFile, ErrCorrupt)
	}
	out := &LatencyLog{Start: time.UnixMilli(lines.startMs).UTC(), Seconds: map[int]*Histogram{}}
	for i, s := range read {
		sec, err := secondOf(s.startMs-lines.startMs, s.h)
		if err != nil {
			return nil, fmt.Errorf("%s interval %d: %w", LatencyLogFile, i+1, err)
		}
		h := &Histogram{h: s.h}
		if prev, ok := out.Seconds[sec]; ok {
			prev.Merge(h) // a second written twice adds up
			continue
		}
		out.Seconds[sec] = h
	}
	if lines.cut {
		return out, fmt.Errorf("%s line %d: no end of line, cut short by an interrupted write: %w", LatencyLogFile, lines.n+1, ErrTruncated)
	}
	return out, nil
}

// secondOf checks an interval read back (offMs after StartTime) and returns its second. The
// reader computes timestamps in float seconds and truncates them to ms, so 1 ms either way is
// the same instant.
func secondOf(offMs int64, hh *hdrhistogram.Histogram) (int, error) {
	sec := int(math.Round(float64(offMs) / 1000))
	if sec < 0 || absInt64(offMs-int64(sec)*1000) > 1 {
		return 0, fmt.Errorf("starts %d ms after StartTime: not on a second of the run: %w", offMs, ErrCorrupt)
	}
	if n := hh.EndTimeMs() - hh.StartTimeMs(); absInt64(n-1000) > 1 {
		return 0, fmt.Errorf("second %d lasts %d ms, want 1000: %w", sec, n, ErrCorrupt)
	}
	if hh.LowestTrackableValue() != LowestLatencyUs || hh.HighestTrackableValue() != maxLatencyUs ||
		hh.SignificantFigures() != SignificantDigits {
		return 0, fmt.Errorf("second %d: geometry lowest=%d highest=%d digits=%d; want %d, %d, %d: %w", sec,
			hh.LowestTrackableValue(), hh.HighestTrackableValue(), hh.SignificantFigures(),
			LowestLatencyUs, maxLatencyUs, SignificantDigits, ErrCorrupt)
	}
	return sec, nil
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// logLines hands hdrhistogram-go's log reader the complete lines of a log, one at a time, and
// notes what that reader does not report: the StartTime line's value (kept to the millisecond)
// and a last line cut short, which it withholds (the library would try to decode it).
type logLines struct {
	br       *bufio.Reader
	long     []byte // a line longer than br's buffer, put together
	pending  []byte
	n        int // complete lines handed on
	startMs  int64
	sawStart bool
	cut      bool
	err      error
}

const startTimePrefix = "#[StartTime: "

func (l *logLines) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.readLine()
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			l.err = fmt.Errorf("%s line %d: longer than %d bytes: %w", LatencyLogFile, l.n+1, maxLogLine, ErrCorrupt)
			continue
		case err == io.EOF:
			l.cut, l.err = len(line) > 0, io.EOF
			continue
		case err != nil:
			l.err = err
			continue
		}
		l.n++
		if s, ok := bytes.CutPrefix(line, []byte(startTimePrefix)); ok && !l.sawStart {
			secs, _, _ := bytes.Cut(s, []byte(" "))
			v, perr := strconv.ParseFloat(string(secs), 64)
			if perr != nil || v < 0 || math.IsInf(v, 0) {
				l.err = fmt.Errorf("%s line %d: StartTime %q is not seconds since the epoch: %w", LatencyLogFile, l.n, secs, ErrCorrupt)
				continue
			}
			l.startMs, l.sawStart = int64(math.Round(v*1000)), true
		}
		l.pending = line
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// readLine returns the next line with its newline: a slice of the reader's buffer, or of long
// (reused) for a line longer than the buffer. Beyond maxLogLine it returns bufio.ErrBufferFull;
// at the end of the input, what is left with io.EOF.
func (l *logLines) readLine() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	l.long = append(l.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) && len(l.long) <= maxLogLine {
		line, err = l.br.ReadSlice('\n')
		l.long = append(l.long, line...)
	}
	if len(l.long) > maxLogLine {
		return nil, bufio.ErrBufferFull
	}
	return l.long, err
}
