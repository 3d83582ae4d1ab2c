package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// algorithmsScenario is a small limit-per-window scenario; its 6 s duration is overridden by
// --duration, so a run of about 2 s shows the flag took effect.
const algorithmsScenario = `name: algorithms-probe
duration: 6s
seed: 5
load: {rate: 300, concurrency: 8, max_inflight: 128}
tenants: {count: 20}
endpoints: [{name: read, weight: 1}]
policy: {limit: 10, window: 1s}
cluster: {primaries: 2, replicas: 0}
limiter: {timeout: 1s}
`

// TestScenariosCompareAlgorithms runs two algorithms through the binary on one local cluster
// and checks the table, each kind's run directory and that no redis-server outlives the command.
func TestScenariosCompareAlgorithms(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "side-by-side.yaml")
	if err := os.WriteFile(file, []byte(algorithmsScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cmp")
	kinds := []string{"token-bucket", "fixed-window"}
	_, out, done, seen := startRepeat(t, "side-by-side", file,
		"--kinds", strings.Join(kinds, ","), "--duration", "2s", "--out", dir)
	if err := wait(t, done, out); err != nil {
		t.Fatalf("exit %d: %v\n%s", exitCode(err), err, out.String())
	}
	pids := seen()
	if len(pids) < 2 {
		t.Errorf("redis-server children %v: want the 2 nodes of the scenario's local cluster", pids)
	}
	waitGone(t, pids, 5*time.Second)
	text := out.String()
	if !strings.Contains(text, "| algorithm | allowed | overspend (ratio) |") {
		t.Errorf("output lacks the table header:\n%s", text)
	}
	var nodes []string
	for i, k := range kinds {
		if !strings.Contains(text, "\n| "+k+" | ") {
			t.Errorf("output lacks the %s row:\n%s", k, text)
		}
		s, err := results.ReadSummary(filepath.Join(dir, k, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if s.Interrupted || s.Seed != 5 || s.Load.Completed < 100 {
			t.Errorf("%s: interrupted %v seed %d decisions %d: want a full run, seed 5",
				k, s.Interrupted, s.Seed, s.Load.Completed)
		}
		// The run's own copy of the scenario says which algorithm it held.
		ran, err := os.ReadFile(filepath.Join(dir, k, results.ScenarioFile))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(ran), "kind: "+k+"\n") {
			t.Errorf("%s/%s does not hold limiter kind %s:\n%s", k, results.ScenarioFile, k, ran)
		}
		if s.DurationS > 4 {
			t.Errorf("%s ran %.1f s: --duration 2s was not applied", k, s.DurationS)
		}
		// Free ports differ between clusters: the same node addresses mean one shared cluster.
		var addrs []string
		for _, n := range s.Nodes {
			addrs = append(addrs, n.Addr)
		}
		slices.Sort(addrs)
		if len(addrs) == 0 {
			t.Errorf("%s: no nodes in the summary", k)
		} else if i == 0 {
			nodes = addrs
		} else if !slices.Equal(addrs, nodes) {
			t.Errorf("%s ran on nodes %v, %s on %v: not one shared cluster", k, addrs, kinds[0], nodes)
		}
	}
}

// TestScenariosCompareAlgorithmsRefuses checks input errors are named before any cluster starts.
func TestScenariosCompareAlgorithmsRefuses(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "side-by-side.yaml")
	if err := os.WriteFile(file, []byte(algorithmsScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{file, "--kinds", "token-bucket,magic"}, []string{"limiter.kind", "magic"}},
		// smoke's policy is rate/burst, which the window kinds cannot read.
		{[]string{"smoke"}, []string{"{limit: L, window: W}"}},
		{[]string{file, "--duration", "0s"}, []string{"--duration 0s"}},
	}
	for _, tt := range tests {
		args := append([]string{"side-by-side"}, tt.args...)
		out, err := exec.Command(binary, args...).CombinedOutput()
		if code := exitCode(err); code != 1 {
			t.Errorf("ratelab %v: exit %d, want 1\n%s", args, code, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("ratelab %v output lacks %q:\n%s", args, w, out)
			}
		}
	}
}
