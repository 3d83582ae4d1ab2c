//go:build faults

package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"ratelab/cluster/clustertest"
	"ratelab/cluster/gubernator"
	"ratelab/results"
	"ratelab/scenarios"
)

// guberSpec is kind gubernator (3 daemons, behaviour behavior) for dur with faults: 30 tenants
// alike at 20 requests/s each against a policy of 5/s burst 20, so every key is drained within
// 2 s and stays saturated (each daemon owns some of them). The 500 ms timeout keeps a busy
// machine's slow answers from reading as the fault's errors (a stopped daemon never answers).
func guberSpec(t *testing.T, behavior string, dur time.Duration, faults string) *scenarios.Spec {
	t.Helper()
	if _, err := gubernator.FindBinary(); err != nil {
		t.Fatalf("%v", err)
	}
	s, err := scenarios.Parse("guber-fault", []byte(`
name: guber-fault
duration: `+dur.String()+`
seed: 7
load: {rate: 600, concurrency: 16, max_inflight: 256}
tenants: {count: 30, distribution: uniform}
endpoints: [{name: api, weight: 1}]
policy: {rate: 5, burst: 20}
limiter: {kind: gubernator, timeout: 500ms, gubernator: {daemons: 3, behavior: `+behavior+`}}
faults: `+faults+`
`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// guberRun runs spec through Open, Drive and Finish (ctx may end it early), and returns its
// summary and rows and the daemons' pids as started; every one must be gone once it returns.
func guberRun(t *testing.T, ctx context.Context, spec *scenarios.Spec) (*results.Summary, []results.Interval) {
	t.Helper()
	s, err := Open(context.Background(), spec, Options{Out: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	pids := s.Gubernator().Pids()
	m, driveErr := s.Drive(ctx)
	res, err := s.Finish(context.Background(), m)
	if cerr := s.Close(); cerr != nil {
		t.Error(cerr)
	}
	if driveErr != nil {
		t.Fatal(driveErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if p == 0 || clustertest.Alive(p) {
			t.Errorf("daemon pid %d (of %v) outlived the run", p, pids)
		}
	}
	sum, rows := readRun(t, res.Dir)
	checkConsistent(t, sum, rows)
	return sum, rows
}

// TestGubernatorDaemonFaults runs each fault of a daemon — kill (restarted after for), pause,
// partition off its peers — through the fault runner on a 3-daemon cluster: the fault is
// injected, not failed; decisions fail while it lasts (requests to the daemon, or forwarded to
// or from it); detection and recovery are measured; the overspend of its window is booked on its
// cause; and no daemon outlives the run.
func TestGubernatorDaemonFaults(t *testing.T) {
	for _, tc := range []struct {
		kind, behavior string
		// errors: requests fail while the fault lasts. Under GLOBAL a daemon answers from its
		// own copy of a key it does not own, so a partition fails nothing: only overspend shows.
		errors bool
		// overspend: the fault makes overspend of its own, booked on its cause. A restarted
		// daemon's buckets start full (gubernator keeps counts in memory); under GLOBAL a daemon
		// whose owner is paused or cut off answers from its own copy, which refills by itself.
		overspend bool
	}{
		{"kill", "batching", true, true},   // 1 s down: the envelope refills 5 of the 20 a restart gives
		{"pause", "batching", true, false}, // a stopped owner: every key it owns times out
		{"partition", "batching", true, false},
		{"partition", "global", false, true},
	} {
		t.Run(tc.kind+"-"+tc.behavior, func(t *testing.T) {
			spec := guberSpec(t, tc.behavior, 8*time.Second, "[{at: 2s, kind: "+tc.kind+", target: \"daemon:1\", for: 1s}]")
			sum, rows := guberRun(t, context.Background(), spec)
			if len(sum.Faults) != 1 {
				t.Fatalf("faults %+v, want 1", sum.Faults)
			}
			f := sum.Faults[0]
			if f.Failed || f.Kind != tc.kind || !strings.HasPrefix(f.Target, "daemon:1 = 127.0.0.1:") || f.ForS != 1 {
				t.Fatalf("fault %+v: want a %s of daemon:1 for 1 s, injected", f, tc.kind)
			}
			var during int64
			for _, r := range rows[2:3] {
				during += r.Errors
			}
			switch {
			case !tc.errors:
				// A busy machine may time a few answers out in any second; the fault adds none.
				if float64(during) > 0.01*float64(rows[2].Offered) {
					t.Errorf("fault %+v, %d errors of %d offered in second 2: want at most 1%% (GLOBAL answers from the daemon's copy)", f, during, rows[2].Offered)
				}
			case during == 0:
				t.Errorf("no errors in second 2, while daemon 1 was down: the fault did not happen")
			case f.DetectedS < 2 || f.DetectedS >= 3 || f.RecoveredS < f.DetectedS || f.RecoveredS > float64(len(rows)) || f.RecoveredS == 0:
				t.Errorf("fault %+v: want detection in second 2 and a recovery within the run", f)
			}
			if tc.kind == "kill" && !slices.ContainsFunc(sum.Overspend.Bound.Unmeasured, func(u results.Unmeasured) bool {
				return u.Source == results.BoundDaemonState
			}) {
				t.Errorf("bound %+v: want the restarted daemon's state listed as not measured", sum.Overspend.Bound)
			}
			if tc.overspend && sum.Overspend.ByCause[tc.kind] == 0 {
				t.Errorf("overspend by cause %v: want some booked on %s", sum.Overspend.ByCause, tc.kind)
			}
			t.Logf("%s (%s): %+v errors during %d, overspend by cause %v, burst excess %.1f", tc.kind, tc.behavior, f, during,
				sum.Overspend.ByCause, sum.Overspend.BurstExcess.WorstTokens)
		})
	}
}

// TestGubernatorInterruptedDuringPause interrupts a run while one daemon is paused: the run
// ends promptly, records the pause, and no daemon — the stopped one included — outlives it.
func TestGubernatorInterruptedDuringPause(t *testing.T) {
	spec := guberSpec(t, "batching", 10*time.Second, "[{at: 1s, kind: pause, target: \"daemon:2\", for: 5s}]")
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	start := time.Now()
	sum, _ := guberRun(t, ctx, spec)
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("the interrupted run took %v, want it to end soon after the interrupt at 2.5 s", el)
	}
	if !sum.Interrupted || len(sum.Faults) != 1 || sum.Faults[0].Failed {
		t.Errorf("interrupted %v, faults %+v: want an interrupted run with its pause recorded", sum.Interrupted, sum.Faults)
	}
}
