package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/report/live"
	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// requirePrometheus names the variable that turns a missing prometheus binary from a skip into a
// failure (CI installs Debian's prometheus package and sets it).
const requirePrometheus = "RATELAB_REQUIRE_PROMETHEUS"

// dashboardFile is the Grafana dashboard whose queries the test runs.
const dashboardFile = "../../deploy/grafana/ratelab.json"

// TestPrometheusSeesTheSummary runs a short scenario on a local Redis Cluster with its live
// metrics scraped by a real Prometheus (every second) and pushed to the same one by remote write,
// then checks that both stored the summary's totals exactly, and that every query of the Grafana
// dashboard parses and returns data.
func TestPrometheusSeesTheSummary(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		clustertest.SkipUnlessRequired(t, requirePrometheus, "prometheus is not installed (apt-get install prometheus)")
	}
	promAddr := freeAddr(t)
	run, err := live.Start("live-test", "live-test-1",
		live.WithListen("127.0.0.1:0"),
		live.WithPush("http://"+promAddr+"/api/v1/write"), live.WithPushEvery(time.Second),
		live.WithGrace(30*time.Second), live.WithInfo(map[string]string{"version": "test"}))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	prom := startPrometheus(t, bin, promAddr, run.Addr())

	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 0})
	state := filepath.Join(t.TempDir(), "state.json")
	if err := l.SaveState(state); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(context.Background(), testSpec(t), engine.Options{
		Out: t.TempDir(), StateFile: state,
		OnInterval: run.OnInterval, OnProgress: run.OnProgress,
		OnHistogram: func(_ int, h *results.Histogram) { run.ObserveHistogram(h) },
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary

	// Finish keeps serving for its grace period; the test cuts it short once it has checked.
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() { finished <- run.Finish(ctx, sum) }()
	defer func() {
		cancel()
		if err := <-finished; err != nil {
			t.Errorf("Finish: %v", err)
		}
	}()

	want := wantTotals(sum)
	// The scrapes after Finish and the final push carry the totals, and say so.
	deadline := time.Now().Add(10 * time.Second)
	for _, sel := range []string{`job="ratelab"`, `job=""`} {
		q := fmt.Sprintf(`ratelab_run_finished{%s}`, sel)
		for prom.value(t, q) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s is not 1 10 s after Finish: Prometheus did not get the final totals", q)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, sel := range []string{`job="ratelab"`, `job=""`} {
		for q, w := range want {
			q = strings.Replace(q, "{", "{"+sel+",", 1)
			if have := prom.value(t, q); have != w {
				t.Errorf("%s = %v, want %v (summary.json)", q, have, w)
			}
		}
	}
	// Every served (decided) request is one observation, as in the run's histogram; an error is
	// no decision. Scraped with native histograms on, Prometheus 2.42 keeps the native form only;
	// the push carries the classic series.
	served := sum.Load.Completed - sum.Outcomes.Errors
	for _, q := range []string{`histogram_count(ratelab_latency_seconds{job="ratelab"})`,
		`ratelab_latency_seconds_count{job=""}`, `ratelab_latency_seconds_bucket{job="",le="+Inf"}`} {
		if have := prom.value(t, q); have != float64(served) {
			t.Errorf("%s = %v, want the served decisions %d", q, have, served)
		}
	}
	t.Logf("summary: offered %d, decisions %d, outcomes %+v, central ops %d", sum.Load.Offered, sum.Load.Completed, sum.Outcomes, sum.Central.Ops)
	checkDashboard(t, prom, sum.StartedAt)
}

// testSpec is a small token-bucket scenario on the running cluster, 300 requests/s for 5 s,
// with the hottest primary paused for 2 s: timeouts, and an active fault for the dashboard.
func testSpec(t *testing.T) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Parse("live-test", []byte(`
name: live-test
duration: 5s
load: {rate: 300, concurrency: 8, max_inflight: 256}
tenants: {count: 50, theta: 0.99}
endpoints: [{name: read, weight: 1}]
policy: {rate: 10, burst: 20}
limiter: {kind: token-bucket, timeout: 200ms}
cluster: {provider: running, primaries: 2, replicas: 0}
faults: [{at: 1s, kind: pause, target: hottest, for: 2s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantTotals maps queries (each with a { for the job selector) to the summary's totals.
func wantTotals(sum *results.Summary) map[string]float64 {
	o, e := sum.Outcomes, sum.Errors
	want := map[string]float64{
		`ratelab_offered_requests_total{}`:   float64(sum.Load.Offered),
		`ratelab_sent_requests_total{}`:      float64(sum.Load.Sent),
		`ratelab_dropped_requests_total{}`:   float64(sum.Load.Dropped),
		`ratelab_late_decisions_total{}`:     float64(sum.Load.Late),
		`ratelab_overspend_requests_total{}`: float64(sum.Overspend.Requests),
		`ratelab_false_denies_total{}`:       float64(sum.Overspend.FalseDenies),
		`ratelab_central_ops_total{}`:        float64(sum.Central.Ops),
		`ratelab_run_info{version="test"}`:   1,
	}
	l := sum.LatencyServedMs
	for q, ms := range map[string]float64{"0.5": l.P50, "0.9": l.P90, "0.99": l.P99, "0.999": l.P999, "1": l.Max} {
		want[fmt.Sprintf(`ratelab_row_latency_seconds{quantile=%q}`, q)] = ms / 1e3
	}
	for k, v := range map[string]int64{"allowed": o.Allowed, "denied": o.Denied, "failed_open": o.FailedOpen,
		"failed_closed": o.FailedClosed, "error": o.Errors} {
		want[fmt.Sprintf(`ratelab_decisions_total{outcome=%q}`, k)] = float64(v)
	}
	for k, v := range map[string]int64{"timeout": e.Timeout, "moved": e.Moved, "ask": e.Ask, "tryagain": e.TryAgain,
		"clusterdown": e.ClusterDown, "noscript": e.NoScript, "conn": e.Conn, "other": e.Other} {
		want[fmt.Sprintf(`ratelab_redis_errors_total{kind=%q}`, k)] = float64(v)
	}
	return want
}

// checkDashboard runs every query of the dashboard (panels, annotations and variables) with its
// Grafana variables substituted: each must parse as an instant query, and return data as a
// range query over the run, as Grafana asks for a panel.
func checkDashboard(t *testing.T, prom *prometheus, from time.Time) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exprs := collectExprs(dash, nil)
	t.Logf("%d dashboard queries", len(exprs))
	if len(exprs) < 8 {
		t.Fatalf("%s: %d queries found, want a panel per figure", dashboardFile, len(exprs))
	}
	r := strings.NewReplacer("$scenario", "live-test", "$run_id", "live-test-1",
		"$__rate_interval", "5s", "$__interval", "1s", "${scenario}", "live-test", "${run_id}", "live-test-1")
	for _, e := range exprs {
		q := r.Replace(e)
		if strings.HasPrefix(q, "label_values(") {
			q = labelValuesQuery(q)
		}
		if _, err := prom.instant(q); err != nil {
			t.Errorf("dashboard query %q: %v", e, err)
			continue
		}
		n, err := prom.series(q, from, time.Now())
		if err != nil {
			t.Errorf("dashboard query %q over the run: %v", e, err)
		} else if n == 0 {
			t.Errorf("dashboard query %q returns no data over the run", e)
		}
	}
}

// labelValuesQuery turns a Grafana variable query label_values(metric, label) into the PromQL
// whose series carry the values.
func labelValuesQuery(q string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(q, "label_values("), ")")
	if i := strings.LastIndex(inner, ","); i >= 0 {
		inner = inner[:i]
	}
	return strings.TrimSpace(inner)
}

// collectExprs returns every "expr" and variable "query" string in the dashboard JSON.
func collectExprs(v any, out []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && (k == "expr" || (k == "query" && strings.Contains(s, "("))) {
				out = append(out, s)
				continue
			}
			out = collectExprs(val, out)
		}
	case []any:
		for _, val := range x {
			out = collectExprs(val, out)
		}
	}
	return out
}

// prometheus is a Prometheus server the test started.
type prometheus struct{ base string }

// startPrometheus runs bin on addr scraping target every second, with the remote-write receiver
// and native histograms on, and waits until it is ready.
func startPrometheus(t *testing.T, bin, addr, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: ratelab
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs: [{targets: [%q]}]
`, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver",
		"--enable-feature=native-histograms", "--log.level=warn")
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	p := &prometheus{base: "http://" + addr}
	for deadline := time.Now().Add(15 * time.Second); ; {
		resp, err := http.Get(p.base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus on %s not ready after 15 s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// series runs a range query from from to to with a 1 s step and returns how many series it
// returned.
func (p *prometheus) series(q string, from, to time.Time) (int, error) {
	res, err := p.api("query_range", url.Values{"query": {q}, "step": {"1"},
		"start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(to.Unix()+1, 10)}})
	if err != nil {
		return 0, err
	}
	return len(res), nil
}

// value runs an instant query that returns one series and returns its value, -1 when it
// returns none or several.
func (p *prometheus) value(t *testing.T, q string) float64 {
	t.Helper()
	res, err := p.instant(q)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	if len(res) != 1 {
		return -1
	}
	s, _ := res[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %q: value %v: %v", q, res[0].Value, err)
	}
	return v
}

type sample struct {
	Metric    map[string]string `json:"metric"`
	Value     []any             `json:"value"`
	Histogram []any             `json:"histogram"`
}

func (p *prometheus) instant(q string) ([]sample, error) {
	return p.api("query", url.Values{"query": {q}})
}

// api calls /api/v1/<path> with form and returns the result's series or samples.
func (p *prometheus) api(path string, form url.Values) ([]sample, error) {
	resp, err := http.PostForm(p.base+"/api/v1/"+path, form)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s", body.Error)
	}
	if body.Data.ResultType == "scalar" {
		return []sample{{}}, nil
	}
	var res []sample
	if err := json.Unmarshal(body.Data.Result, &res); err != nil {
		return nil, err
	}
	return res, nil
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
