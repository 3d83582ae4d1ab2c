package live

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"

	"ratelab/results"
)

// feed gives m two rows and a snapshot, then a summary that has more than the rows (late answers).
func feed(m *Metrics) *results.Summary {
	m.OnInterval(results.Interval{TS: 0, Offered: 100, Sent: 98, Dropped: 2, Allowed: 60, Denied: 30, Errors: 5,
		Timeout: 4, Moved: 2, Overspend: 1, FalseDenies: 2, CentralOps: 95})
	// Two errors, no decision: not in the achieved rate (which reads 98, not 100). One write
	// refused with NOREPLICAS: the unreplicated kind.
	m.OnInterval(results.Interval{TS: 1, Offered: 100, Sent: 100, Allowed: 70, Denied: 28, Errors: 2, Conn: 2, Ask: 1,
		Unreplicated: 1, CentralOps: 99, P50Ms: 1.5, P90Ms: 2, P99Ms: 4, P999Ms: 8, MaxMs: 9})
	m.OnProgress(results.Progress{Offered: 250, Sent: 247, Dropped: 3, InFlight: 7, Fault: "pause"})
	sum := results.NewSummary("s", 1, time.Unix(0, 0))
	sum.Load = results.Load{Offered: 300, Sent: 297, Dropped: 3, Completed: 297, Late: 1, OfferedRPS: 100, AchievedRPS: 98.5}
	sum.Outcomes = results.Outcomes{Allowed: 190, Denied: 90, FailedOpen: 5, FailedClosed: 2, Errors: 10}
	sum.Errors = results.Errors{Timeout: 6, Moved: 2, Ask: 1, TryAgain: 1, ClusterDown: 1, NoScript: 1, Conn: 3, Unreplicated: 2, Other: 1}
	sum.Overspend.Requests, sum.Overspend.FalseDenies = 3, 1
	sum.Central.Ops = 290
	sum.LatencyServedMs = results.ServedLatency{P50: 1, P90: 2.5, P99: 5, P999: 10, Max: 20}
	return sum
}

func TestMetricsFollowRowsThenEqualTheSummary(t *testing.T) {
	t.Parallel()
	m := NewMetrics("s", "r1", map[string]string{"version": "v1"})
	sum := feed(m)
	before := []struct {
		name string
		have float64
		want float64
	}{
		{"offered (snapshot ahead of rows)", value(t, m, MetricOffered, "", ""), 250},
		{"dropped (snapshot)", value(t, m, MetricDropped, "", ""), 3},
		{"allowed (rows)", value(t, m, MetricDecisions, "outcome", "allowed"), 130},
		{"timeout (rows)", value(t, m, MetricRedisErrors, "kind", "timeout"), 4},
		{"unreplicated (rows)", value(t, m, MetricRedisErrors, "kind", "unreplicated"), 1},
		{"central ops (rows)", value(t, m, MetricCentralOps, "", ""), 194},
		{"fault pause active", value(t, m, MetricFaultActive, "kind", "pause"), 1},
		{"in flight", value(t, m, MetricInFlight, "", ""), 7},
		{"offered rate (last row)", value(t, m, MetricOfferedRate, "", ""), 100},
		{"achieved rate (last row)", value(t, m, MetricAchievedRate, "", ""), 98},
		{"not finished", value(t, m, MetricFinished, "", ""), 0},
		{"p50 of the last row", value(t, m, MetricRowLatency, "quantile", "0.5"), 0.0015},
		{"max of the last row", value(t, m, MetricRowLatency, "quantile", "1"), 0.009},
	}
	for _, c := range before {
		if c.have != c.want {
			t.Errorf("before Finish: %s = %v, want %v", c.name, c.have, c.want)
		}
	}
	m.Finish(sum)
	m.OnInterval(results.Interval{TS: 2, Offered: 1000, Allowed: 1000}) // after Finish: ignored
	after := map[[3]string]float64{
		{MetricOffered}: 300, {MetricSent}: 297, {MetricDropped}: 3, {MetricLate}: 1,
		{MetricDecisions, "outcome", "allowed"}: 190, {MetricDecisions, "outcome", "denied"}: 90,
		{MetricDecisions, "outcome", "failed_open"}: 5, {MetricDecisions, "outcome", "failed_closed"}: 2,
		{MetricDecisions, "outcome", "error"}:  10,
		{MetricRedisErrors, "kind", "timeout"}: 6, {MetricRedisErrors, "kind", "other"}: 1,
		{MetricRedisErrors, "kind", "unreplicated"}: 2, {MetricRedisErrors, "kind", "conn"}: 3,
		{MetricOverspend}: 3, {MetricFalseDenies}: 1, {MetricCentralOps}: 290,
		{MetricOfferedRate}: 100, {MetricAchievedRate}: 98.5, {MetricInFlight}: 0,
		{MetricFaultActive, "kind", "pause"}: 0, {MetricRunInfo, "version", "v1"}: 1, {MetricFinished}: 1,
		{MetricRowLatency, "quantile", "0.99"}: 0.005, {MetricRowLatency, "quantile", "1"}: 0.02,
	}
	for k, want := range after {
		if have := value(t, m, k[0], k[1], k[2]); have != want {
			t.Errorf("after Finish: %s{%s=%q} = %v, want %v", k[0], k[1], k[2], have, want)
		}
	}
}

func TestEverySeriesCarriesTheRun(t *testing.T) {
	t.Parallel()
	m := NewMetrics("s", "r1", nil)
	feed(m)
	m.ObserveHistogram(histOf(3 * time.Millisecond))
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			var scen, run string
			for _, l := range mt.GetLabel() {
				switch l.GetName() {
				case LabelScenario:
					scen = l.GetValue()
				case LabelRunID:
					run = l.GetValue()
				}
			}
			if scen != "s" || run != "r1" {
				t.Errorf("%s %v: want scenario=s run_id=r1", f.GetName(), mt.GetLabel())
			}
		}
	}
	h := gather(t, m, MetricLatency)[0].GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSchema() != 3 || len(h.GetBucket()) != len(LatencyBuckets) {
		t.Errorf("latency histogram: count %d schema %d classic buckets %d, want 1, 3 (native) and %d",
			h.GetSampleCount(), h.GetSchema(), len(h.GetBucket()), len(LatencyBuckets))
	}
}

// TestPushSendsRemoteWrite decodes what a push sends, as a remote-write receiver would.
func TestPushSendsRemoteWrite(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]float64, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header
		if h.Get("Content-Type") != "application/x-protobuf" || h.Get("Content-Encoding") != "snappy" ||
			h.Get("X-Prometheus-Remote-Write-Version") != "0.1.0" {
			t.Errorf("headers %v", h)
		}
		body, _ := io.ReadAll(r.Body)
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			t.Errorf("snappy: %v", err)
		}
		got <- decodeWriteRequest(t, raw)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	run, err := Start("s", "r1", WithPush(srv.URL), WithPushEvery(time.Hour), WithGrace(0))
	if err != nil {
		t.Fatal(err)
	}
	sum := feed(run.Metrics)
	run.ObserveHistogram(histOf(2 * time.Millisecond))
	if err := run.Finish(t.Context(), sum); err != nil {
		t.Fatal(err)
	}
	s := <-got
	for k, want := range map[string]float64{
		`ratelab_decisions_total{outcome="allowed",run_id="r1",scenario="s"}`:  190,
		`ratelab_offered_requests_total{run_id="r1",scenario="s"}`:             300,
		`ratelab_latency_seconds_bucket{le="0.0025",run_id="r1",scenario="s"}`: 1,
		`ratelab_latency_seconds_bucket{le="0.001",run_id="r1",scenario="s"}`:  0,
		`ratelab_latency_seconds_bucket{le="+Inf",run_id="r1",scenario="s"}`:   1,
		`ratelab_latency_seconds_count{run_id="r1",scenario="s"}`:              1,
		`ratelab_run_info{run_id="r1",scenario="s"}`:                           1,
	} {
		if have, ok := s[k]; !ok || have != want {
			t.Errorf("pushed %s = %v (present %v), want %v", k, have, ok, want)
		}
	}
}

func TestFinishServesThenStops(t *testing.T) {
	t.Parallel()
	run, err := Start("s", "r1", WithListen("127.0.0.1:0"), WithGrace(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + run.Addr() + MetricsPath
	sum := feed(run.Metrics)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run.Finish(ctx, sum) }()
	var body string
	for range 50 { // Finish sets the totals first; poll until a scrape shows them
		body = get(t, url)
		if strings.Contains(body, `ratelab_offered_requests_total{run_id="r1",scenario="s"} 300`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(body, `ratelab_offered_requests_total{run_id="r1",scenario="s"} 300`) {
		t.Errorf("scrape during the grace period lacks the final offered total:\n%s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("server still serves after Finish")
	}
}

// gather returns the metrics of family name.
func gather(t *testing.T, m *Metrics, name string) []*dto.Metric {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

// value is the counter or gauge of family name with label = val (any when label is ""); NaN
// when there is none.
func value(t *testing.T, m *Metrics, name, label, val string) float64 {
	t.Helper()
	for _, mt := range gather(t, m, name) {
		for _, l := range mt.GetLabel() {
			if label == "" || (l.GetName() == label && l.GetValue() == val) {
				if c := mt.GetCounter(); c != nil {
					return c.GetValue()
				}
				return mt.GetGauge().GetValue()
			}
		}
	}
	return math.NaN()
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decodeWriteRequest reads a WriteRequest into series written as name{label="value",...}
// (labels sorted) mapped to their sample's value.
func decodeWriteRequest(t *testing.T, b []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, ts := range fields(t, b, 1) {
		var name string
		var labels []string
		var v float64
		for _, lb := range fields(t, ts, 1) {
			kv := fields(t, lb, 1, 2)
			if string(kv[0]) == "__name__" {
				name = string(kv[1])
			} else {
				labels = append(labels, string(kv[0])+"="+`"`+string(kv[1])+`"`)
			}
		}
		for _, sb := range fields(t, ts, 2) {
			bits, _ := protowire.ConsumeFixed64(fields(t, sb, 1)[0])
			v = math.Float64frombits(bits)
		}
		sort.Strings(labels)
		out[name+"{"+strings.Join(labels, ",")+"}"] = v
	}
	return out
}

// fields returns the raw values of the given field numbers in message b, in order.
func fields(t *testing.T, b []byte, nums ...protowire.Number) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var val []byte
		switch typ {
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			val, n = v, m
		case protowire.Fixed64Type:
			n = 8
			val = b[:8]
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			val = b[:max(n, 0)]
		}
		if n < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(n))
		}
		for _, want := range nums {
			if num == want {
				out = append(out, val)
			}
		}
		b = b[n:]
	}
	return out
}

// histOf is a second's histogram holding one latency d.
func histOf(d time.Duration) *results.Histogram {
	h := results.NewHistogram()
	h.Record(d)
	return h
}
