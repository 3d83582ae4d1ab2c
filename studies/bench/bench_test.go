package bench

import (
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

func TestParseBenchCSV(t *testing.T) {
	t.Parallel()
	good := `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"evalsha abc 1 k 1 0.1 200 1 2000","27352.30","2.314","0.144","0.687","7.023","11.903","48.735"
`
	c, err := parseBenchCSV([]byte(good))
	if err != nil || c.RequestsPerSec != 27352.30 || c.P50Ms != 0.687 || c.P99Ms != 11.903 {
		t.Fatalf("parseBenchCSV = %+v, %v; want rps 27352.30, p50 0.687, p99 11.903", c, err)
	}
	for name, in := range map[string]string{
		"empty":       "",
		"header only": `"test","rps"` + "\n",
		"no p99":      `"test","rps","p50_latency_ms"` + "\n" + `"x","10","1"` + "\n",
		"zero rps":    strings.Replace(good, "27352.30", "0", 1),
		"not number":  strings.Replace(good, "27352.30", "fast", 1),
	} {
		if _, err := parseBenchCSV([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestNum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		have float64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {2_000_000.4, "2,000,000"}, {123456.6, "123,457"}} {
		if got := num(tc.have); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.have, got, tc.want)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	o := Options{Quick: true}
	if err := o.defaults(); err != nil || o.Seconds != QuickSeconds || o.Out != DefaultOut || o.Conns != DefaultConns || o.Depth != DefaultDepth || o.ClientProcs != DefaultClientProcs || o.Linger == nil || *o.Linger != DefaultLinger || o.Repeat != DefaultRepeat || o.GatewayConns != DefaultGatewayConns || o.Wrk != "wrk" {
		t.Fatalf("defaults of a quick run: %+v, %v", o, err)
	}
	long := time.Second
	bad := Options{Seconds: time.Millisecond, Conns: -1, Depth: 5000, ClientProcs: -1, Linger: &long, Repeat: 21, GatewayConns: -3}
	err := bad.defaults()
	for _, want := range []string{"seconds 1ms", "conns -1", "depth 5000", "client procs -1", "linger 1s: must be 0..10ms", "repeat 21: must be 1..20", "gateway conns -3"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("defaults of %+v: %v; want an error naming %q", bad, err, want)
		}
	}
}

// TestMarkdownWarnsOfAChangedMachine: when Redis spent clearly more CPU per call under the best
// central variant than under redis-benchmark (or less), the host's speed changed between them
// and README.md says the ratio is not to be trusted; a few percent apart it says nothing.
func TestMarkdownWarnsOfAChangedMachine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		central, ceiling float64
		warn             bool
	}{{8.3, 7.7, false}, {13.4, 7.8, true}, {7.6, 12.3, true}, {0, 7.8, false}} {
		rep := &Report{Repetitions: []Repetition{{
			Central: []Central{{Mode: "ratelab coalescing", DecisionsPerSec: 100, RedisUsPerCall: tc.central}},
			Ceiling: Ceiling{RequestsPerSec: 120, RedisUsPerCall: tc.ceiling},
			Ratio:   Ratio{Best: "ratelab coalescing", Value: 100.0 / 120},
		}}}
		md := Markdown(rep)
		if got := strings.Contains(md, "the machine's speed changed"); got != tc.warn {
			t.Errorf("Redis %.1f vs %.1f µs per call: warning %v, want %v", tc.central, tc.ceiling, got, tc.warn)
		}
	}
}

// TestMarkdownOpenLoopRow: section 3's open-loop row gives hot-tenant's rate, its latency from the
// intended start ("not measurable" past the decided share, never +Inf), the CPU per decision by
// part and the script calls per read, each as the median and range of the repetitions.
func TestMarkdownOpenLoopRow(t *testing.T) {
	t.Parallel()
	rep := &Report{Repetitions: []Repetition{
		{OpenLoop: OpenLoop{OfferedRPS: 100000, AchievedRPS: 55000, P50Ms: 12, P99Ms: results.Unmeasurable,
			CPU: &results.CPUPerDecision{Generator: 12, Primaries: 14, Replicas: 4, Total: 30}, CallsPerRead: 15}},
		{OpenLoop: OpenLoop{OfferedRPS: 100000, AchievedRPS: 61000, P50Ms: 10, P99Ms: results.Unmeasurable,
			CPU: &results.CPUPerDecision{Generator: 11, Primaries: 13, Replicas: 3, Total: 27}, CallsPerRead: 17}},
	}}
	md := Markdown(rep)
	for _, want := range []string{
		"| 3 central | hot-tenant, 100,000 offered, open loop over 3 primaries x 1 replica, coalescing | 58,000 (55,000–61,000) | 11.000 (10.000–12.000) | not measurable |",
		"generator 11.5 (11.0–12.0), primaries 13.5 (13.0–14.0), replicas 3.5 (3.0–4.0), total 28.5 (27.0–30.0); 16.0 (15.0–17.0) script calls per read",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("README lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Inf") {
		t.Errorf("README prints Inf:\n%s", md)
	}
}
