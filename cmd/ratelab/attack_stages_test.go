package main

import (
	"bufio"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// TestAttackStagesAndLiveMetrics: `attack --stages` ramps the offered rate from 0 as the stages
// say (a 0-to-400/s ramp over 2 s, then 1 s held: 100, 300 and 400 requests in its seconds) and
// judges its SLO second by second, and `--metrics-listen` serves live counters that end equal to
// summary.json's totals.
func TestAttackStagesAndLiveMetrics(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(srv.Close)
	addr := freeLoopbackAddr(t)
	final := make(chan map[string]float64, 1)
	go func() { final <- scrapeUntilFinished(addr, 60*time.Second) }()

	dir := t.TempDir()
	out := filepath.Join(dir, "ramp")
	code, stdout, stderr := execRatelab(t, dir, "attack", "-q", "--url", srv.URL+"/", "--stages", "400@2s,hold@1s",
		"--tenants", "10", "--policy", "rate=1000,burst=1000", "--slo", "achieved_ratio=0.5", "--out", out,
		"--metrics-listen", addr, "--metrics-grace", "3s")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	sum, err := results.ReadSummary(filepath.Join(out, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(out, results.TimeseriesFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := results.ReadTimeseries(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Stages == nil || len(sum.Stages.Checked) != 1 || len(sum.Stages.FirstFailure) != 0 {
		t.Errorf("summary.stages %+v: want achieved_ratio judged every second, never failed", sum.Stages)
	}
	want := []int64{100, 300, 400}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d (the stages last 3 s)", len(rows), len(want))
	}
	for i, r := range rows {
		if d := r.Offered - want[i]; d < -1 || d > 1 {
			t.Errorf("second %d offered %d, want %d ± 1 (the ramp's integral over the second)", i, r.Offered, want[i])
		}
	}

	m := <-final
	if m == nil {
		t.Fatalf("the live metrics at %s never said the run finished", addr)
	}
	var served int64
	for _, r := range rows {
		served += r.Served()
	}
	for name, v := range map[string]int64{
		// The latency histogram hears each written second's histogram: every served request.
		"ratelab_latency_seconds_count":              served,
		"ratelab_offered_requests_total":             sum.Load.Offered,
		"ratelab_sent_requests_total":                sum.Load.Sent,
		`ratelab_decisions_total{outcome="allowed"}`: sum.Outcomes.Allowed,
	} {
		if got, ok := m[name]; !ok || got != float64(v) {
			t.Errorf("live %s = %v (present %v), summary.json %d", name, got, ok, v)
		}
	}
}

// freeLoopbackAddr returns a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// scrapeUntilFinished scrapes http://addr/metrics until ratelab_run_finished is 1 and returns
// that scrape's samples by name (labels other than scenario and run_id kept), or nil at timeout.
func scrapeUntilFinished(addr string, timeout time.Duration) map[string]float64 {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		m := map[string]float64{}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") {
				continue
			}
			name, val, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil || math.IsNaN(v) {
				continue
			}
			m[stripRunLabels(name)] = v
		}
		resp.Body.Close()
		if m["ratelab_run_finished"] == 1 {
			return m
		}
	}
	return nil
}

// stripRunLabels drops the scenario and run_id labels every live series carries.
func stripRunLabels(series string) string {
	name, labels, ok := strings.Cut(series, "{")
	if !ok {
		return series
	}
	var kept []string
	for _, l := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
		if !strings.HasPrefix(l, "scenario=") && !strings.HasPrefix(l, "run_id=") && l != "" {
			kept = append(kept, l)
		}
	}
	if len(kept) == 0 {
		return name
	}
	return name + "{" + strings.Join(kept, ",") + "}"
}

// TestRunStagesAndLiveMetrics: `run --stages` ramps an in-process run the same way, its summary
// names the per-second SLO checks it judged, and the live latency histogram counts every
// decision (it hears each one, through the engine's consumers).
func TestRunStagesAndLiveMetrics(t *testing.T) {
	t.Parallel()
	addr := freeLoopbackAddr(t)
	final := make(chan map[string]float64, 1)
	go func() { final <- scrapeUntilFinished(addr, 60*time.Second) }()
	dir := t.TempDir()
	out := filepath.Join(dir, "ramp")
	code, stdout, stderr := execRatelab(t, dir, "run", "smoke", "-q", "--limiter", "memory", "--stages", "400@2s,hold@1s",
		"--slo", "achieved_ratio=0.5", "--out", out, "--metrics-listen", addr, "--metrics-grace", "3s")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	sum, err := results.ReadSummary(filepath.Join(out, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if d := sum.Load.Offered - 800; d < -2 || d > 2 {
		t.Errorf("offered %d, want 800 ± 2 (400 over the ramp, 400 held)", sum.Load.Offered)
	}
	if sum.Stages == nil || len(sum.Stages.Checked) == 0 {
		t.Errorf("summary.stages %+v: want the per-second checks of smoke's SLO", sum.Stages)
	}
	m := <-final
	if m == nil {
		t.Fatalf("the live metrics at %s never said the run finished", addr)
	}
	if got := m["ratelab_latency_seconds_count"]; got != float64(sum.Load.Completed) {
		t.Errorf("live latency histogram counted %v decisions, summary.json %d", got, sum.Load.Completed)
	}
}
