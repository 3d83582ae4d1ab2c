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
)

// TimeLayout is the layout of the time_utc column: RFC 3339 in UTC, to the millisecond.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// maxLineBytes bounds one timeseries.csv line, far above what a row of len(columns) numbers needs.
const maxLineBytes = 4096

// flusher is implemented by buffered writers (bufio.Writer); Write flushes them after each row.
type flusher interface{ Flush() error }

// TimeseriesWriter writes timeseries.csv one Interval at a time. Each row goes to the underlying
// writer in a single Write call and is flushed at once, so an interrupted run keeps every row
// written so far and a reader can follow the file while the run goes. Not safe for concurrent use.
type TimeseriesWriter struct {
	w   io.Writer
	buf []byte   // one row, reused: Write allocates nothing
	row Interval // the row being written; a field so that &row does not escape per call
}

// NewTimeseriesWriter writes the CSV header to w and returns a writer for the rows.
func NewTimeseriesWriter(w io.Writer) (*TimeseriesWriter, error) {
	t := &TimeseriesWriter{w: w, buf: make([]byte, 0, 256)}
	for i, c := range columns {
		if i > 0 {
			t.buf = append(t.buf, ',')
		}
		t.buf = append(t.buf, c.name...)
	}
	if err := t.flush(); err != nil {
		return nil, fmt.Errorf("timeseries: write header: %w", err)
	}
	return t, nil
}

// Write appends one row and flushes it. A negative count or a NaN, infinite or negative number
// is rejected with ErrInvalid and nothing is written (the reader would reject the row).
func (t *TimeseriesWriter) Write(iv Interval) error {
	t.row = iv
	r := &t.row
	t.buf = t.buf[:0]
	for i := range columns {
		c := &columns[i]
		if i > 0 {
			t.buf = append(t.buf, ',')
		}
		if c.t != nil {
			var err error
			if t.buf, err = appendTime(t.buf, *c.t(r)); err != nil {
				return fmt.Errorf("timeseries: row t_s=%g: column %s: %w", iv.TS, c.name, err)
			}
			continue
		}
		if c.i != nil {
			v := *c.i(r)
			if v < 0 {
				return fmt.Errorf("timeseries: row t_s=%g: column %s = %d; counts must be >= 0: %w",
					iv.TS, c.name, v, ErrInvalid)
			}
			t.buf = strconv.AppendInt(t.buf, v, 10)
			continue
		}
		var v float64
		if c.d != nil {
			v = c.d(r)
		} else {
			v = *c.f(r)
		}
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("timeseries: row t_s=%g: column %s = %g; want a finite number >= 0 "+
				"(write 0 for a second with no samples): %w", iv.TS, c.name, v, ErrInvalid)
		}
		// 'f' with precision -1 is the shortest text that parses back to the same float64.
		t.buf = strconv.AppendFloat(t.buf, v, 'f', -1, 64)
	}
	if err := t.flush(); err != nil {
		return fmt.Errorf("timeseries: write row t_s=%g: %w", iv.TS, err)
	}
	return nil
}

// appendTime appends tm in TimeLayout, or nothing for the zero time (a writer that did not know
// the run's start). A year outside 0..9999 has no RFC 3339 form: ErrInvalid.
func appendTime(buf []byte, tm time.Time) ([]byte, error) {
	if tm.IsZero() {
		return buf, nil
	}
	tm = tm.UTC()
	if y := tm.Year(); y < 0 || y > 9999 {
		return buf, fmt.Errorf("year %d has no RFC 3339 form: %w", y, ErrInvalid)
	}
	return tm.AppendFormat(buf, TimeLayout), nil
}

// parseTime reads a time_utc field: empty is the zero time; anything else is RFC 3339, read in
// UTC to the millisecond (what the writer writes).
func parseTime(f []byte) (time.Time, error) {
	if len(f) == 0 {
		return time.Time{}, nil
	}
	tm, err := time.Parse(time.RFC3339Nano, string(f))
	if err != nil {
		return time.Time{}, err
	}
	return tm.UTC().Truncate(time.Millisecond), nil
}

func (t *TimeseriesWriter) flush() error {
	t.buf = append(t.buf, '\n')
	if _, err := t.w.Write(t.buf); err != nil {
		return err
	}
	if f, ok := t.w.(flusher); ok {
		return f.Flush()
	}
	return nil
}

// ReadTimeseries reads a timeseries.csv. Columns are matched by header name: the first
// requiredColumns columns of the layout must be present, later known columns are optional (0
// when absent: files written before late and dropped_share read with Late 0, files without
// time_utc with a zero Time) and unknown
// columns are ignored. A derived column (dropped_share) must hold a number; its value is
// computed from the counts (Interval.DroppedShare), present or not. On a corrupt row (ErrCorrupt) or a last line cut
// short by an interrupted write (ErrTruncated: no end of line) it returns the rows read so far
// together with an error naming the line and column.
func ReadTimeseries(r io.Reader) ([]Interval, error) {
	br := bufio.NewReaderSize(r, maxLineBytes)
	hdr, err := readLine(br, 1)
	if err == errCutShort {
		return nil, fmt.Errorf("timeseries line 1: header cut short after %q: %w", hdr, ErrTruncated)
	}
	if err != nil {
		return nil, err
	}
	layout, err := parseHeader(hdr)
	if err != nil {
		return nil, err
	}
	var rows []Interval
	for n := 2; ; n++ {
		line, err := readLine(br, n)
		if err == io.EOF {
			return rows, nil
		}
		if err == errCutShort {
			// The writer ends every row with a newline in the same Write, so a last line without
			// one is a partial write, even if what is there happens to parse.
			col := bytes.Count(line, []byte{','}) + 1
			name := "unknown"
			if col <= len(layout) && layout[col-1] >= 0 {
				name = columns[layout[col-1]].name
			}
			return rows, fmt.Errorf("timeseries line %d column %d (%s): no end of line, the row was cut "+
				"short (interrupted write): %w", n, col, name, ErrTruncated)
		}
		if err != nil {
			return rows, err
		}
		if len(line) == 0 {
			continue // a blank line carries no row
		}
		iv, err := parseRow(line, n, layout)
		if err != nil {
			return rows, err
		}
		rows = append(rows, iv)
	}
}

// errCutShort is readLine's signal for a last line without a newline; the caller names the column.
var errCutShort = errors.New("cut short")

// readLine returns line n without its line ending, io.EOF at a clean end of input, or an error
// when the line is too long, or errCutShort with the partial line when input ends without a
// newline (a row cut short by an interrupted write).
func readLine(br *bufio.Reader, n int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case err == nil:
		line = line[:len(line)-1]
		return bytes.TrimSuffix(line, []byte{'\r'}), nil
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("timeseries line %d: longer than %d bytes: %w", n, maxLineBytes, ErrCorrupt)
	case err == io.EOF && len(line) == 0:
		if n == 1 {
			return nil, fmt.Errorf("timeseries line 1: empty file, no header: %w", ErrTruncated)
		}
		return nil, io.EOF
	case err == io.EOF:
		return line, errCutShort

	default:
		return nil, fmt.Errorf("timeseries line %d: %w", n, err)
	}
}

// parseHeader maps each CSV field to an index into columns, or -1 for an unknown column.
func parseHeader(line []byte) ([]int, error) {
	fields := bytes.Split(line, []byte{','})
	layout := make([]int, len(fields))
	seen := make([]bool, len(columns))
	for i, f := range fields {
		layout[i] = -1
		for j := range columns {
			if string(f) != columns[j].name {
				continue
			}
			if seen[j] {
				return nil, fmt.Errorf("timeseries line 1 column %d: duplicate column %q: %w", i+1, f, ErrCorrupt)
			}
			seen[j] = true
			layout[i] = j
		}
	}
	for j := range requiredColumns {
		if !seen[j] {
			return nil, fmt.Errorf("timeseries line 1: header lacks required column %q "+
				"(is this a ratelab timeseries.csv?): %w", columns[j].name, ErrCorrupt)
		}
	}
	return layout, nil
}

// parseRow parses one data line laid out as the header says.
func parseRow(line []byte, n int, layout []int) (Interval, error) {
	var iv Interval
	fields := bytes.Split(line, []byte{','})
	if len(fields) != len(layout) {
		return iv, fmt.Errorf("timeseries line %d: %d fields, the header has %d: %w",
			n, len(fields), len(layout), ErrCorrupt)
	}
	for i, f := range fields {
		j := layout[i]
		if j < 0 {
			continue
		}
		c := &columns[j]
		if c.t != nil {
			tm, err := parseTime(f)
			if err != nil {
				return iv, fieldError(n, i, c.name, f, "an RFC 3339 time")
			}
			*c.t(&iv) = tm
			continue
		}
		if c.i != nil {
			v, err := strconv.ParseInt(string(f), 10, 64)
			if err != nil || v < 0 {
				return iv, fieldError(n, i, c.name, f, "a count >= 0")
			}
			*c.i(&iv) = v
			continue
		}
		v, err := strconv.ParseFloat(string(f), 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return iv, fieldError(n, i, c.name, f, "a finite number >= 0")
		}
		if c.f != nil {
			*c.f(&iv) = v
		}
	}
	return iv, nil
}

func fieldError(line, i int, name string, text []byte, want string) error {
	const show = 32 // quote at most this much of a bad field
	if len(text) > show {
		text = append(text[:show:show], "..."...)
	}
	return fmt.Errorf("timeseries line %d column %d (%s): %q is not %s: %w", line, i+1, name, text, want, ErrCorrupt)
}
