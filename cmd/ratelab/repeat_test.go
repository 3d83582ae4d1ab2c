package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// repeatScenario is light and short: these tests are about the repetitions, not the numbers.
const repeatScenario = `name: repeat-probe
duration: 1s
seed: 9
load: {rate: 200, concurrency: 8, max_inflight: 128}
tenants: {count: 50}
endpoints: [{name: read, weight: 1}]
policy: {rate: 20, burst: 40}
cluster: {primaries: 2, replicas: 0}
limiter: {timeout: 1s}
`

// startRepeat starts `ratelab run --repeat` and records every redis-server child it ever has
// until it exits, so a test can tell how many clusters it started and that none outlived it.
func startRepeat(t *testing.T, args ...string) (cmd *exec.Cmd, out *syncBuffer, done <-chan error, seen func() []int) {
	t.Helper()
	cmd = exec.Command(binary, args...)
	out = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	pids := map[int]bool{}
	var mu = make(chan struct{}, 1)
	ch := make(chan error, 1)
	stopPoll := make(chan struct{})
	go func() { ch <- cmd.Wait(); close(stopPoll) }()
	go func() {
		for {
			mu <- struct{}{}
			for _, p := range redisChildren(t, cmd.Process.Pid) {
				pids[p] = true
			}
			<-mu
			select {
			case <-stopPoll:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return cmd, out, ch, func() []int {
		mu <- struct{}{}
		defer func() { <-mu }()
		var list []int
		for p := range pids {
			list = append(list, p)
		}
		return list
	}
}

func wait(t *testing.T, done <-chan error, out *syncBuffer) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(3 * time.Minute):
		t.Fatalf("ratelab run --repeat did not end within 3 minutes:\n%s", out.String())
		return nil
	}
}

func TestRunRepeat(t *testing.T) {
	file := filepath.Join(t.TempDir(), "repeat.yaml")
	if err := os.WriteFile(file, []byte(repeatScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("one shared cluster, one directory per repetition", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "reps")
		_, out, done, seen := startRepeat(t, "run", file, "--repeat", "3", "--out", dir, "-q")
		if err := wait(t, done, out); err != nil {
			t.Fatalf("exit %d: %v\n%s", exitCode(err), err, out.String())
		}
		pids := seen()
		// One cluster of 2 nodes, not one per repetition (a node whose port was taken while it
		// started is restarted on another, so a loaded machine may show a pid or two more).
		if len(pids) < 2 || len(pids) >= 2*3 {
			t.Errorf("redis-server children over the whole run: %v, want the 2 nodes of one shared cluster", pids)
		}
		waitGone(t, pids, 5*time.Second)
		var nodes string
		for i := 1; i <= 3; i++ {
			rep := repDir(dir, i)
			s, err := results.ReadSummary(filepath.Join(rep, results.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			// Each repetition starts from empty buckets: buckets drained by the previous one
			// would deny what the envelope (full at the start) allows, as false denies.
			if s.Overspend.FalseDenyRatio > 0.1 {
				t.Errorf("%s: false-deny ratio %.3f: the buckets of the previous repetition were not emptied", rep, s.Overspend.FalseDenyRatio)
			}
			if s.Seed != 9 || s.Interrupted || s.Load.Completed < 100 || s.Environment.Provider != "local" {
				t.Errorf("%s: seed %d interrupted %v decisions %d provider %q: want a full run, same seed, provider local",
					rep, s.Seed, s.Interrupted, s.Load.Completed, s.Environment.Provider)
			}
			// Free ports differ between clusters: the same node addresses mean the same cluster.
			var addrs []string
			for _, n := range s.Nodes {
				addrs = append(addrs, n.Addr)
			}
			sort.Strings(addrs)
			if got := strings.Join(addrs, " "); i == 1 {
				nodes = got
			} else if got != nodes {
				t.Errorf("%s ran on nodes %q, rep-01 on %q: not one shared cluster", rep, got, nodes)
			}
			for _, f := range []string{"report.html", "timeseries.csv", "latency.svg"} {
				if _, err := os.Stat(filepath.Join(rep, f)); err != nil {
					t.Errorf("%s: %v", rep, err)
				}
			}
		}
		if nodes == "" {
			t.Error("the summaries name no nodes")
		}
		if n := strings.Count(out.String(), "SLO pass"); n != 3 || !strings.Contains(out.String(), "ratelab compare BASE "+dir) {
			t.Errorf("output has %d per-repetition lines, want 3 and the compare hint:\n%s", n, out.String())
		}
	})
	t.Run("an SLO failed in any repetition exits 3", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "reps")
		_, out, done, seen := startRepeat(t, "run", file, "--repeat", "2", "--out", dir, "-q", "--slo", "p99_ms=0.000001")
		err := wait(t, done, out)
		if code := exitCode(err); code != exitSLOFailed {
			t.Errorf("exit %d, want %d\n%s", code, exitSLOFailed, out.String())
		}
		waitGone(t, seen(), 5*time.Second)
		for i := 1; i <= 2; i++ {
			if _, err := results.ReadSummary(filepath.Join(repDir(dir, i), results.SummaryFile)); err != nil {
				t.Errorf("a failed SLO must not stop the repetitions: %v", err)
			}
		}
	})
	t.Run("ctrl-c keeps what ran and stops the cluster", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "reps")
		cmd, out, done, seen := startRepeat(t, "run", file, "--repeat", "3", "--duration", "20s", "--out", dir, "-q")
		deadline := time.Now().Add(2 * time.Minute)
		for !strings.Contains(out.String(), "running repeat-probe") {
			if time.Now().After(deadline) {
				t.Fatalf("the first repetition did not start:\n%s", out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond)
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err := wait(t, done, out)
		if code := exitCode(err); code != exitInterrupted {
			t.Errorf("exit %d, want %d\n%s", code, exitInterrupted, out.String())
		}
		waitGone(t, seen(), 5*time.Second)
		s, err := results.ReadSummary(filepath.Join(repDir(dir, 1), results.SummaryFile))
		if err != nil || !s.Interrupted || s.Load.Completed == 0 {
			t.Errorf("rep-01 after Ctrl-C: %v: want its partial results marked interrupted", err)
		}
		if _, err := os.Stat(repDir(dir, 2)); !os.IsNotExist(err) {
			t.Errorf("rep-02 exists (%v): no repetition may start after Ctrl-C", err)
		}
	})
}
