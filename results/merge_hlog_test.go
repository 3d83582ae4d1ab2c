package results

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// mergedRun is what a test reads back from a merged directory.
type mergedRun struct {
	sum  *Summary
	rows []Interval
	log  *LatencyLog
	hgrm []byte
}

func mergeRun(t *testing.T, parts ...fakePart) mergedRun {
	t.Helper()
	root := t.TempDir()
	var dirs []string
	for _, p := range parts {
		d := filepath.Join(root, "s"+string(rune('0'+p.index)))
		p.write(t, d)
		dirs = append(dirs, d)
	}
	out := filepath.Join(root, "merged")
	sum, err := Merge(out, dirs)
	if err != nil {
		t.Fatal(err)
	}
	m := mergedRun{sum: sum}
	f, err := os.Open(filepath.Join(out, TimeseriesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if m.rows, err = ReadTimeseries(f); err != nil {
		t.Fatal(err)
	}
	lf, err := os.Open(filepath.Join(out, LatencyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if m.log, err = ReadLatencyLog(lf); err != nil {
		t.Fatal(err)
	}
	if m.hgrm, err = os.ReadFile(filepath.Join(out, PercentilesFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, SecondsHistogramFile)); err == nil {
		t.Errorf("the merge wrote %s; it writes %s", SecondsHistogramFile, LatencyLogFile)
	}
	return m
}

// Parts that wrote latency.hlog merge to the same percentiles, per second and over the run, as
// the same parts written as an older ratelab wrote them (latency-seconds.hdr), and as a mix of
// both; the merged directory has latency.hlog and latency.hgrm either way. The merged clock is
// the earliest part's load start, or with old parts only their summaries' started_at.
func TestMergeReadsLatencyLogAndOldSeconds(t *testing.T) {
	t.Parallel()
	part := func(i int, old bool) fakePart {
		return fakePart{index: i, count: 2, lat: seededLatencies(uint64(10+i), 4, 3000*(i+1), time.Duration(i+1)*time.Millisecond), oldSeconds: old}
	}
	newer := mergeRun(t, part(0, false), part(1, false))
	for _, tt := range []struct {
		name      string
		m         mergedRun
		wantStart time.Time
	}{
		{"both old", mergeRun(t, part(0, true), part(1, true)), time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)},
		{"old and new", mergeRun(t, part(0, true), part(1, false)), part(1, false).loadStart()},
		{"both new", newer, part(0, false).loadStart()},
	} {
		m := tt.m
		if m.sum.LatencyMs != newer.sum.LatencyMs || m.sum.LatencyServedMs != newer.sum.LatencyServedMs {
			t.Errorf("%s: latency %+v / %+v; parts with latency.hlog: %+v / %+v", tt.name, m.sum.LatencyMs, m.sum.LatencyServedMs,
				newer.sum.LatencyMs, newer.sum.LatencyServedMs)
		}
		if len(m.rows) != 4 || len(m.log.Seconds) != 4 {
			t.Fatalf("%s: %d rows, %d seconds in the log; want 4", tt.name, len(m.rows), len(m.log.Seconds))
		}
		for sec, r := range m.rows {
			w := newer.rows[sec]
			if r.P50Ms != w.P50Ms || r.P99Ms != w.P99Ms || r.P999Ms != w.P999Ms || r.MaxMs != w.MaxMs || r.Served() != w.Served() {
				t.Errorf("%s: second %d: p50/p99/p999/max %v/%v/%v/%v served %d; from latency.hlog %v/%v/%v/%v served %d", tt.name, sec,
					r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs, r.Served(), w.P50Ms, w.P99Ms, w.P999Ms, w.MaxMs, w.Served())
			}
			h := m.log.Seconds[sec]
			if h == nil || h.Count() != r.Served() || h.QuantileMs(99) != r.P99Ms {
				t.Errorf("%s: merged latency.hlog second %d: %v; want %d served, p99 %v", tt.name, sec, h, r.Served(), r.P99Ms)
			}
			if want := SecondTime(tt.wantStart, r.TS); !r.Time.Equal(want) {
				t.Errorf("%s: second %d: time_utc %v, want %v", tt.name, sec, r.Time, want)
			}
		}
		if !m.log.Start.Equal(tt.wantStart) {
			t.Errorf("%s: merged log starts %v, want %v", tt.name, m.log.Start, tt.wantStart)
		}
		cs := logComments(t, string(m.hgrm))
		if len(cs) != 1 || cs[0].counts != (RequestCounts{Offered: m.sum.Load.Offered, Served: m.sum.Load.Completed, Dropped: m.sum.Load.Dropped}) {
			t.Errorf("%s: merged latency.hgrm counts %+v; want the merged summary's", tt.name, cs)
		}
	}
}
