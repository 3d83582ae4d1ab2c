package results

import (
	"fmt"
	"io"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// SecondsHistogramWriter writes latency-seconds.hdr as runs of an older ratelab did, one line
// per second of the run, for the tests of the reader and of a merge of such runs:
//
//	t_s count clamped histogram
//
// where histogram is HdrHistogram's V2 compressed encoding in base64, the form latency.hdr.json
// carries. Each line goes out in one Write as the run goes, so an interrupted run keeps every
// second written so far. These are what make a merge of parts exact: the p99 of a second across
// generators is the p99 of the merged histograms, not any mix of the parts' p99s.
// Not safe for concurrent use.
type SecondsHistogramWriter struct {
	w   io.Writer
	buf []byte
}

// NewSecondsHistogramWriter writes the header line to w and returns a writer for the seconds.
func NewSecondsHistogramWriter(w io.Writer) (*SecondsHistogramWriter, error) {
	s := &SecondsHistogramWriter{w: w}
	if _, err := io.WriteString(w, secondsHeader+"\n"); err != nil {
		return nil, fmt.Errorf("%s: write header: %w", SecondsHistogramFile, err)
	}
	return s, nil
}

// Write appends second sec's histogram.
func (s *SecondsHistogramWriter) Write(sec int, h *Histogram) error {
	if sec < 0 {
		return fmt.Errorf("%s: second %d: must be >= 0: %w", SecondsHistogramFile, sec, ErrInvalid)
	}
	enc, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return fmt.Errorf("%s: second %d: encode: %w", SecondsHistogramFile, sec, err)
	}
	s.buf = strconv.AppendInt(s.buf[:0], int64(sec), 10)
	s.buf = append(s.buf, ' ')
	s.buf = strconv.AppendInt(s.buf, h.Count(), 10)
	s.buf = append(s.buf, ' ')
	s.buf = strconv.AppendInt(s.buf, h.clamped, 10)
	s.buf = append(s.buf, ' ')
	s.buf = append(s.buf, enc...)
	s.buf = append(s.buf, '\n')
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("%s: second %d: %w", SecondsHistogramFile, sec, err)
	}
	if f, ok := s.w.(flusher); ok {
		return f.Flush()
	}
	return nil
}
