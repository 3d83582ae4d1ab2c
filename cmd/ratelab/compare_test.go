package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/cluster/clustertest"
)

// compareScenario is a short, light scenario: at 300 decisions/s the machine is far from busy,
// so what moves p99 is the decision path, not the generator.
const compareScenario = `name: compare-probe
duration: 2s
seed: 3
load: {rate: 300, concurrency: 16, max_inflight: 256}
tenants: {count: 100, theta: 0.99}
endpoints: [{name: read, weight: 1}]
policy: {rate: 50, burst: 100}
cluster: {primaries: 2, replicas: 0}
limiter: {timeout: 1s}
`

// delayFault adds 1 ms each way through every node's proxy for the whole run: +2 ms on every
// decision's round trip. A latency fault needs the proxies, which live in the process that
// starts the cluster, so these runs start their own cluster (as `run --repeat` does for a
// scenario with faults).
const delayFault = `faults: [{at: 0s, kind: latency, target: all, delay: 1ms, for: 0s}]
`

// TestCompareDetectsInjectedDelay runs the same scenario as three interleaved sets of 5
// repetitions — BASE and SAME on one shared cluster, SLOW with a 2 ms round-trip delay injected
// by the latency fault — and checks `ratelab compare`: SAME against BASE is no regression (exit
// 0), SLOW against BASE is a significant p99 regression (exit 3). Interleaving the repetitions
// spreads a busy moment of the machine over all three sets instead of loading one.
func TestCompareDetectsInjectedDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 15 short scenarios against real Redis Clusters")
	}
	dir := t.TempDir()
	plain := writeScenario(t, dir, "plain.yaml", compareScenario)
	slow := writeScenario(t, dir, "slow.yaml", compareScenario+delayFault)

	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: cluster.NoReplicas})
	state := filepath.Join(dir, "cluster.json")
	if err := l.SaveState(state); err != nil {
		t.Fatal(err)
	}
	client := clustertest.Client(t, l)
	run := func(spec *scenarios.Spec, out, stateFile string) {
		t.Helper()
		if stateFile != "" {
			// Every run starts from empty buckets, as `run --repeat` makes sure on its shared cluster.
			err := client.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
				return n.FlushAll(ctx).Err()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := scenarios.Run(ctx, spec, scenarios.RunOptions{Out: out, StateFile: stateFile})
		if err != nil {
			t.Fatalf("run %s: %v", out, err)
		}
		if res.Summary.Interrupted || res.Summary.Load.Decisions < 300 {
			t.Fatalf("run %s: interrupted %v, %d decisions", out, res.Summary.Interrupted, res.Summary.Load.Decisions)
		}
	}
	const reps = 5
	began := time.Now()
	for i := 1; i <= reps; i++ {
		shared := load(t, plain)
		shared.Cluster.Provider = "running"
		// Alternate which of BASE and SAME goes first, so neither always follows the SLOW run's
		// cluster shutting down.
		first, second := "base", "same"
		if i%2 == 0 {
			first, second = second, first
		}
		run(shared, repDir(filepath.Join(dir, first), i), state)
		run(shared, repDir(filepath.Join(dir, second), i), state)
		run(load(t, slow), repDir(filepath.Join(dir, "slow"), i), "")
	}
	t.Logf("%d repetitions x 3 sets in %v", reps, time.Since(began).Round(time.Millisecond))

	// The gate's settings (Makefile PERF_FLAGS): alpha 0.01 over seven metrics, thresholds for a
	// busy runner. Two sets of one build must pass them.
	flags := []string{"--alpha", "0.01", "--threshold", "p50_ms=30%", "--threshold", "p99_ms=50%", "--threshold", "p999_ms=100%"}
	compareCmd := func(extra ...string) (string, int) {
		args := append(append([]string{"compare"}, flags...), extra...)
		out, err := exec.Command(binary, args...).CombinedOutput()
		return string(out), exitCode(err)
	}
	out, code := compareCmd(filepath.Join(dir, "base"), filepath.Join(dir, "same"))
	t.Logf("same build:\n%s", out)
	if code != 0 {
		t.Errorf("compare of two sets of the same build: exit %d, want 0 (no significant regression)", code)
	}

	out, code = compareCmd("--format", "md", filepath.Join(dir, "base"), filepath.Join(dir, "slow"))
	t.Logf("with 2 ms injected:\n%s", out)
	// What the gate must say follows from the numbers: when every SLOW run is above every BASE
	// run in a metric, the U test's p is 2/252 < 0.01, and with the medians apart by more than
	// the threshold that metric is a regression. The median feels every decision's extra 2 ms
	// and few stalls, so p50 separates except on a saturated machine; p99 separates when no
	// BASE run stalled for longer than the whole delay. A metric whose sets overlap is logged,
	// not judged: no rank test on 5 runs can call it, and a test that asked would flap.
	judged := 0
	for _, m := range []struct {
		name  string
		ratio float64
		vals  func(*results.Summary) float64
	}{
		{"p50_ms", 1.3, func(s *results.Summary) float64 { return s.LatencyMs.P50 }},
		{"p99_ms", 1.5, func(s *results.Summary) float64 { return s.LatencyMs.P99 }},
	} {
		lo, hi := readMetric(t, dir, "base", reps, m.vals), readMetric(t, dir, "slow", reps, m.vals)
		separated := hi[0] > lo[len(lo)-1] && hi[len(hi)/2] > m.ratio*lo[len(lo)/2]
		regressed := regexpLine(out, "| "+m.name+" (ms) |", "**REGRESSION**")
		switch {
		case separated && !regressed:
			t.Errorf("%s: every SLOW run (%v) is above every BASE run (%v) by more than the threshold at the median, yet it is not a regression", m.name, hi, lo)
		case separated:
			judged++
			t.Logf("%s: significant regression, as the separated sets require", m.name)
		case regressed:
			t.Logf("%s: a regression although the sets overlap a little (BASE %v, SLOW %v)", m.name, lo, hi)
		default:
			t.Logf("%s not judged: BASE %v and SLOW %v overlap; this machine stalled longer than the %v ms injected", m.name, lo, hi, injectedMs)
		}
	}
	if judged > 0 && code != exitRegression {
		t.Errorf("compare with a 2 ms delay: exit %d, want %d (regression)", code, exitRegression)
	}
}

// injectedMs is the round-trip delay delayFault adds.
const injectedMs = 2.0

func writeScenario(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, path string) *scenarios.Spec {
	t.Helper()
	spec, err := scenarios.Resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// regexpLine reports whether some line of s starts with prefix and contains want.
func regexpLine(s, prefix, want string) bool {
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

// readMetric reads one metric of a set's runs, sorted.
func readMetric(t *testing.T, dir, set string, reps int, value func(*results.Summary) float64) []float64 {
	t.Helper()
	var out []float64
	for i := 1; i <= reps; i++ {
		s, err := results.ReadSummary(filepath.Join(repDir(filepath.Join(dir, set), i), results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, value(s))
	}
	sort.Float64s(out)
	return out
}
