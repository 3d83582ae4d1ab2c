package engine

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"ratelab/results"
)

// checkRunFiles asserts that a run directory's latency.hlog, latency.hgrm and time_utc column
// agree with its summary and rows: the log, read with hdrhistogram-go's own reader, has one
// interval per row holding the row's served requests, starting at the row's time_utc, 1 s
// apart; its totals line and latency.hgrm's counts are the summary's; latency.hgrm's footer
// has the whole run's count and max.
func checkRunFiles(t *testing.T, dir string, sum *results.Summary, rows []results.Interval) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.LatencyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := hdrhistogram.NewHistogramLogReader(f)
	var inIntervals int64
	for i := 0; ; i++ {
		hh, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatalf("%s interval %d: %v", results.LatencyLogFile, i, err)
		}
		if hh == nil {
			if i != len(rows) {
				t.Errorf("%s has %d intervals, timeseries.csv %d rows", results.LatencyLogFile, i, len(rows))
			}
			break
		}
		if i >= len(rows) {
			continue
		}
		r := rows[i]
		if hh.TotalCount() != r.Served() {
			t.Errorf("interval %d holds %d values; its row served %d", i, hh.TotalCount(), r.Served())
		}
		if d := hh.StartTimeMs() - r.Time.UnixMilli(); r.Time.IsZero() || d < -1 || d > 1 {
			t.Errorf("interval %d starts at %d ms since the epoch; its row's time_utc is %v", i, hh.StartTimeMs(), r.Time)
		}
		if i > 0 {
			if d := r.Time.Sub(rows[i-1].Time); d != 1e9 {
				t.Errorf("rows %d and %d are %v apart in time_utc, want 1s", i-1, i, d)
			}
		}
		if d := hh.EndTimeMs() - hh.StartTimeMs(); d < 999 || d > 1001 {
			t.Errorf("interval %d lasts %d ms, want 1000", i, d)
		}
		inIntervals += hh.TotalCount()
	}
	if len(rows) > 0 && (rows[0].Time.Before(sum.StartedAt) || rows[0].Time.Sub(sum.StartedAt).Minutes() > 5) {
		t.Errorf("second 0 started at %v, the run at %v: want the load's start, shortly after", rows[0].Time, sum.StartedAt)
	}
	if inIntervals > sum.Load.Completed {
		t.Errorf("the intervals hold %d values, more than the run's %d decisions", inIntervals, sum.Load.Completed)
	}
	// Served: the decided requests, an error being no decision.
	served := sum.Load.Completed - sum.Outcomes.Errors
	want := results.RequestCounts{Offered: sum.Load.Offered, Served: served, Dropped: sum.Load.Dropped, Failed: sum.Outcomes.Errors}
	if have := countsLine(t, dir, results.LatencyLogFile, "#[run "); have != want.String() {
		t.Errorf("%s totals %q, summary %q", results.LatencyLogFile, have, want)
	}
	if have := countsLine(t, dir, results.PercentilesFile, "#[ratelab: served"); have != want.String() {
		t.Errorf("%s counts %q, summary %q", results.PercentilesFile, have, want)
	}
	total, maxMs := hgrmFooter(t, dir)
	if total != served || maxMs != sum.LatencyServedMs.Max {
		t.Errorf("%s footer: total count %d, max %v ms; summary: %d served, served max %v ms", results.PercentilesFile, total, maxMs, served, sum.LatencyServedMs.Max)
	}
}

// countsLine returns the "offered=... failed=N" part of the first line of dir/name that starts
// with prefix.
func countsLine(t *testing.T, dir, name, prefix string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.Index(line, "offered=")
		j := strings.Index(line, ";")
		if i < 0 || j < i {
			t.Fatalf("%s: %q has no counts", name, line)
		}
		return line[i:j]
	}
	t.Fatalf("%s has no line starting %q", name, prefix)
	return ""
}

// hgrmFooter reads latency.hgrm's "#[Max = m, Total count = n]" line.
func hgrmFooter(t *testing.T, dir string) (int64, float64) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.PercentilesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.NewReplacer(",", " ", "]", " ").Replace(sc.Text()))
		if len(fields) == 7 && fields[0] == "#[Max" {
			maxMs, err1 := strconv.ParseFloat(fields[2], 64)
			total, err2 := strconv.ParseInt(fields[6], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: footer %q", results.PercentilesFile, sc.Text())
			}
			return total, maxMs
		}
	}
	t.Fatalf("%s has no #[Max footer", results.PercentilesFile)
	return 0, 0
}
