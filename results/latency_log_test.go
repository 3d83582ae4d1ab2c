package results

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// logStart is a run's start with a millisecond part, which the log must keep.
var logStart = time.Date(2026, 12, 7, 9, 33, 20, 437_912_000, time.UTC)

// seededSeconds returns secs per-second histograms and their rows from a seeded generator:
// an exponential body with a rare slow tail, a few drops and errors per second, and one empty
// second (nothing answered) in the middle.
func seededSeconds(seed uint64, secs int) ([]*Histogram, []Interval) {
	rng := rand.New(rand.NewPCG(seed, 7))
	hs := make([]*Histogram, secs)
	rows := make([]Interval, secs)
	for s := range hs {
		h := NewHistogram()
		n := 200 + rng.IntN(800)
		if s == secs/2 {
			n = 0
		}
		for range n {
			d := time.Duration(rng.ExpFloat64() * float64(800*time.Microsecond))
			if rng.IntN(200) == 0 {
				d = time.Duration(20+rng.IntN(200)) * time.Millisecond
			}
			h.Record(d)
		}
		// The histogram holds the served (decided) requests; the failed ones got no decision.
		dropped, failed := int64(rng.IntN(5)), int64(rng.IntN(3))
		hs[s] = h
		rows[s] = Interval{TS: float64(s), Offered: int64(n) + failed + dropped, Sent: int64(n) + failed, Dropped: dropped,
			Allowed: int64(n), Errors: failed, Timeout: failed}
	}
	return hs, rows
}

// writeSeries writes hs and rows through a SeriesWriter into a new directory and returns it.
func writeSeries(t *testing.T, start time.Time, hs []*Histogram, rows []Interval, total RequestCounts) string {
	t.Helper()
	dir := t.TempDir()
	sw, err := CreateSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.Start(start); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if err := sw.Write(rows[i], hs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.End(total); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The log read back with hdrhistogram-go's own reader: one interval per second with the
// second's count and values, absolute start timestamps 1 s apart from the run's start, the
// log's StartTime to the millisecond; the counts comments beside the intervals agree.
func TestLatencyLogReadByTheLibrary(t *testing.T) {
	t.Parallel()
	hs, rows := seededSeconds(1, 12)
	var total RequestCounts
	all := NewHistogram()
	for i := range rows {
		all.Merge(hs[i])
		total.Offered += rows[i].Offered
		total.Dropped += rows[i].Dropped
		total.Failed += rows[i].Errors
	}
	total.Served = all.Count() + 5 // five answered after their second was written
	dir := writeSeries(t, logStart, hs, rows, total)
	data := readFile(t, dir, LatencyLogFile)

	lr := hdrhistogram.NewHistogramLogReader(bytes.NewReader(data))
	var sum int64
	for i := 0; ; i++ {
		hh, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if hh == nil {
			if i != len(hs) {
				t.Fatalf("read %d intervals, wrote %d", i, len(hs))
			}
			break
		}
		wantStart := logStart.UnixMilli() + int64(i)*1000
		if d := hh.StartTimeMs() - wantStart; d < -1 || d > 1 {
			t.Errorf("interval %d starts at %d ms since the epoch, want %d (the run's start + %d s)", i, hh.StartTimeMs(), wantStart, i)
		}
		if d := hh.EndTimeMs() - hh.StartTimeMs(); d < 999 || d > 1001 {
			t.Errorf("interval %d lasts %d ms, want 1000", i, d)
		}
		if hh.TotalCount() != hs[i].Count() || hh.TotalCount() != rows[i].Served() {
			t.Errorf("interval %d: count %d, the second's histogram %d, its row's served %d", i, hh.TotalCount(), hs[i].Count(), rows[i].Served())
		}
		if have, want := float64(hh.ValueAtQuantile(99))/1000, hs[i].QuantileMs(99); have != want {
			t.Errorf("interval %d: p99 %v ms, the second's %v ms", i, have, want)
		}
		sum += hh.TotalCount()
	}
	if sum != all.Count() {
		t.Errorf("intervals hold %d values, the seconds %d", sum, all.Count())
	}

	text := string(data)
	wantHead := fmt.Sprintf("#[Histogram log format version 1.3]\n#[StartTime: %d.437 (seconds since epoch), 2026-12-07T09:33:20.437Z]\n"+
		"#[BaseTime: 0.000 (seconds since epoch)]\n", logStart.Unix())
	if !strings.HasPrefix(text, wantHead) {
		t.Errorf("head\n%s\nwant it to start\n%s", text[:min(len(text), 300)], wantHead)
	}
	for _, want := range []string{"values in microseconds", "Interval_Max in seconds", `"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	// Each interval follows its counts; the last line has the totals.
	comments := logComments(t, text)
	if len(comments) != len(rows)+1 {
		t.Fatalf("%d counts comments, want %d (one per second and the totals)", len(comments), len(rows)+1)
	}
	for i, c := range comments[:len(rows)] {
		want := RequestCounts{Offered: rows[i].Offered, Served: hs[i].Count(), Dropped: rows[i].Dropped, Failed: rows[i].Errors}
		if c.ts != i || c.counts != want {
			t.Errorf("comment %d: t_s %d %+v, want t_s %d %+v", i, c.ts, c.counts, i, want)
		}
	}
	last := comments[len(comments)-1]
	if last.counts != total || !strings.Contains(last.line, fmt.Sprintf("served in the intervals above %d, answered after their second was written 5", all.Count())) {
		t.Errorf("totals line %q, want %+v and 5 late", last.line, total)
	}
}

type logComment struct {
	line   string
	ts     int // -1 on the totals line
	counts RequestCounts
}

// logComments parses the counts comments of a latency.hlog or latency.hgrm.
func logComments(t *testing.T, text string) []logComment {
	t.Helper()
	var out []logComment
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") || !strings.Contains(line, "offered=") {
			continue
		}
		c := logComment{line: line, ts: -1}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '[' || r == ']' || r == ';' || r == '#' })
		for _, f := range fields {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("line %q: %s is not a count", line, f)
			}
			switch k {
			case "t_s":
				c.ts = int(n)
			case "offered":
				c.counts.Offered = n
			case "served":
				c.counts.Served = n
			case "dropped":
				c.counts.Dropped = n
			case "failed":
				c.counts.Failed = n
			}
		}
		out = append(out, c)
	}
	return out
}

// ReadLatencyLog files each interval under its second and keeps the start to the millisecond;
// timeseries.csv's time_utc column states the same instants.
func TestLatencyLogRoundTrip(t *testing.T) {
	t.Parallel()
	hs, rows := seededSeconds(2, 5)
	dir := writeSeries(t, logStart, hs, rows, RequestCounts{})
	log, err := ReadLatencyLog(bytes.NewReader(readFile(t, dir, LatencyLogFile)))
	if err != nil {
		t.Fatal(err)
	}
	if !log.Start.Equal(logStart.Truncate(time.Millisecond)) || len(log.Seconds) != len(hs) {
		t.Fatalf("start %v, %d seconds; want %v and %d", log.Start, len(log.Seconds), logStart, len(hs))
	}
	for i, h := range hs {
		have := log.Seconds[i]
		if have == nil || have.Count() != h.Count() || have.QuantileMs(50) != h.QuantileMs(50) || have.MaxMs() != h.MaxMs() {
			t.Errorf("second %d read back %v, wrote count %d", i, have, h.Count())
		}
	}
	ts, err := ReadTimeseries(bytes.NewReader(readFile(t, dir, TimeseriesFile)))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ts {
		if want := log.Start.Add(time.Duration(i) * time.Second); !r.Time.Equal(want) {
			t.Errorf("row %d: time_utc %v, want %v (the log's start + %d s)", i, r.Time, want, i)
		}
	}
}

// A log cut in its last line keeps the seconds before it; other damage is refused.
func TestReadLatencyLogDamaged(t *testing.T) {
	t.Parallel()
	hs, rows := seededSeconds(3, 4)
	data := readFile(t, writeSeries(t, logStart, hs, rows, RequestCounts{}), LatencyLogFile)
	// Cut inside the last interval's payload (before the totals comment and its own newline).
	lastInterval := bytes.LastIndex(data, []byte("\n#[run "))
	cut := data[:lastInterval-10]
	log, err := ReadLatencyLog(bytes.NewReader(cut))
	if !errors.Is(err, ErrTruncated) || log == nil || len(log.Seconds) != 3 {
		t.Errorf("cut log: %v, %v; want ErrTruncated with 3 seconds", err, log)
	}
	// A comment line longer than the reader's buffer is read through.
	long := bytes.Replace(data, []byte("#[BaseTime:"), append(append([]byte("#"), bytes.Repeat([]byte("y"), 300<<10)...), "\n#[BaseTime:"...), 1)
	if log, err := ReadLatencyLog(bytes.NewReader(long)); err != nil || len(log.Seconds) != 4 {
		t.Errorf("log with a 300 KB comment: %v, %v; want its 4 seconds", err, log)
	}
	noStart := bytes.Replace(data, []byte("#[StartTime:"), []byte("#[Start:"), 1)
	garbled := bytes.Replace(data, []byte(",HISTF"), []byte(",HISTX"), 1)
	offBoundary := bytes.Replace(data, []byte("#[BaseTime: 0.000"), []byte("#[BaseTime: 0.400"), 1)
	for _, tt := range []struct {
		name string
		have []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"no StartTime", noStart, ErrCorrupt},
		{"undecodable interval", garbled, ErrCorrupt},
		{"off the second boundaries", offBoundary, ErrCorrupt},
		{"line too long", append([]byte("#"), bytes.Repeat([]byte("x"), maxLogLine+1)...), ErrCorrupt},
	} {
		if _, err := ReadLatencyLog(bytes.NewReader(tt.have)); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

// Each second reaches the file in one write, even through a buffered writer.
func TestLatencyLogWriteFlushes(t *testing.T) {
	t.Parallel()
	var file bytes.Buffer
	bw := bufio.NewWriterSize(&file, 64<<10)
	w, err := NewLatencyLogWriter(bw, logStart)
	if err != nil {
		t.Fatal(err)
	}
	hs, rows := seededSeconds(4, 2)
	for i := range hs {
		before := file.Len()
		if err := w.Write(i, hs[i], RequestCounts{Offered: rows[i].Offered}); err != nil {
			t.Fatal(err)
		}
		if file.Len() == before || file.Bytes()[file.Len()-1] != '\n' {
			t.Errorf("second %d did not reach the file whole", i)
		}
	}
	if err := w.Write(-1, hs[0], RequestCounts{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("second -1: %v, want ErrInvalid", err)
	}
	if err := w.Write(0, hs[0], RequestCounts{}); err != nil || hs[0].h.StartTimeMs() != 0 {
		t.Errorf("Write left the histogram stamped at %d ms (err %v); want its timestamps restored", hs[0].h.StartTimeMs(), err)
	}
}

// The series refuses rows before Start and rows off the second boundaries.
func TestSeriesWriterRejects(t *testing.T) {
	t.Parallel()
	sw, err := CreateSeries(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	h := NewHistogram()
	if err := sw.Write(Interval{}, h); !errors.Is(err, ErrInvalid) {
		t.Errorf("Write before Start: %v, want ErrInvalid", err)
	}
	if err := sw.Start(logStart); err != nil {
		t.Fatal(err)
	}
	if err := sw.Start(logStart); !errors.Is(err, ErrInvalid) {
		t.Errorf("second Start: %v, want ErrInvalid", err)
	}
	if err := sw.Write(Interval{TS: 1.5}, h); !errors.Is(err, ErrInvalid) {
		t.Errorf("t_s 1.5: %v, want ErrInvalid", err)
	}
}

// latency.hgrm parses as HdrHistogram's percentile output: four numeric columns ending at the
// max, the footer's mean, max and total count those of the histogram in ms, the counts beside.
func TestPercentilesFile(t *testing.T) {
	t.Parallel()
	hs, _ := seededSeconds(5, 3)
	h := NewHistogram()
	for _, s := range hs {
		h.Merge(s)
	}
	h.Record(10 * time.Minute) // clamped
	c := RequestCounts{Offered: h.Count() + 7, Served: h.Count(), Dropped: 7, Failed: 2}
	var buf bytes.Buffer
	if err := h.WritePercentiles(&buf, c); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	var rows [][4]float64
	var mean, maxMs float64
	var total int64
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if strings.HasPrefix(line, "#[Mean") {
			mean, _ = strconv.ParseFloat(strings.TrimSuffix(f[2], ","), 64)
		}
		if strings.HasPrefix(line, "#[Max") {
			maxMs, _ = strconv.ParseFloat(strings.TrimSuffix(f[2], ","), 64)
			total, _ = strconv.ParseInt(strings.TrimSuffix(f[len(f)-1], "]"), 10, 64)
		}
		if len(f) != 4 || strings.HasPrefix(line, "#") {
			continue
		}
		var r [4]float64
		ok := true
		for i := range f {
			v, err := strconv.ParseFloat(f[i], 64)
			r[i], ok = v, ok && (err == nil || i == 3)
		}
		if ok {
			rows = append(rows, r)
		}
	}
	if len(rows) < 20 || rows[len(rows)-1][1] != 1 || int64(rows[len(rows)-1][2]) != h.Count() {
		t.Fatalf("%d percentile rows, last %v; want many, ending at percentile 1 with the total count %d:\n%s", len(rows), rows[len(rows)-1], h.Count(), text)
	}
	for i, r := range rows {
		if i > 0 && (r[0] < rows[i-1][0] || r[1] < rows[i-1][1]) {
			t.Errorf("row %d %v: values and percentiles must not decrease", i, r)
		}
	}
	if want := h.QuantileMs(50); math.Abs(rows[len(rows)/2][0]-want) > want && rows[0][0] > want {
		t.Errorf("rows do not read in ms: first %v, median %v ms", rows[0][0], want)
	}
	if math.Abs(mean-h.h.Mean()/1000) > 0.0005 || maxMs != h.MaxMs() || total != h.Count() || rows[len(rows)-1][0] != h.MaxMs() {
		t.Errorf("footer mean %v max %v total %d, last value %v; want %.3f, %v, %d", mean, maxMs, total, rows[len(rows)-1][0], h.h.Mean()/1000, h.MaxMs(), h.Count())
	}
	if cs := logComments(t, text); len(cs) != 1 || cs[0].counts != c {
		t.Errorf("counts comments %+v, want one with %+v", cs, c)
	}
	if !strings.Contains(text, "Value in ms") || !strings.Contains(text, "1 latencies above 300000 ms") {
		t.Errorf("hgrm lacks its unit or clamped count:\n%s", text[len(text)-400:])
	}
}

func FuzzReadLatencyLog(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewLatencyLogWriter(&buf, logStart)
	hs, rows := seededSeconds(6, 2)
	for i := range hs {
		w.Write(i, hs[i], RequestCounts{Offered: rows[i].Offered})
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)-9])
	f.Add([]byte("#[StartTime: 1.5 (x)]\nTag=a\n1,1,1,\n\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := ReadLatencyLog(bytes.NewReader(data))
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
			t.Fatalf("error %v wraps neither ErrCorrupt nor ErrTruncated", err)
		}
		if log == nil {
			return
		}
		for sec, h := range log.Seconds {
			if sec < 0 || h == nil {
				t.Fatalf("second %d: %v", sec, h)
			}
		}
	})
}
