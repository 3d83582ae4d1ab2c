//go:build faults

package engine

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/cluster/clustertest"
	"ratelab/results"
	"ratelab/scenarios"
)

// The fault tests below time recovery and tail latency: they are the fault tier (`make
// test-faults`, the `faults` build tag), which runs one test at a time after the correctness
// suite. A failing one ends with a line saying whether the machine was starved or the product
// misbehaved (clustertest.Watch).

// faultSpec is a 3x1 central scenario at a rate this machine carries, with the given faults.
func faultSpec(t *testing.T, dur time.Duration, extra string) *scenarios.Spec {
	t.Helper()
	if !strings.Contains(extra, "cluster:") {
		extra = "cluster: {primaries: 3, replicas: 1, node_timeout: 1s}\n" + extra
	}
	if !strings.Contains(extra, "endpoints:") {
		extra = "endpoints: [{name: read, weight: 1}]\n" + extra
	}
	s, err := scenarios.Parse("fault-test", []byte(`
name: fault-test
load: {rate: 1000, concurrency: 16, max_inflight: 256}
tenants: {count: 300, theta: 0.99}
policy: {rate: 20, burst: 40}
`+extra))
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = scenarios.Duration(dur)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

func runFaults(t *testing.T, spec *scenarios.Spec) (*results.Summary, []results.Interval) {
	t.Helper()
	sum, rows, _ := runFaultsIn(t, spec)
	return sum, rows
}

// runFaultsIn is runFaults that also returns the run's directory.
func runFaultsIn(t *testing.T, spec *scenarios.Spec) (*results.Summary, []results.Interval, string) {
	t.Helper()
	clustertest.Watch(t)
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	sum, rows := readRun(t, res.Dir)
	clustertest.RecordLag(t, sum.Load.ScheduleLagP99Ms)
	checkConsistent(t, sum, rows)
	if len(sum.Faults) != len(spec.Faults) {
		t.Fatalf("faults %+v, want %d", sum.Faults, len(spec.Faults))
	}
	for _, f := range sum.Faults {
		if f.Failed {
			t.Errorf("fault %+v was not injected", f)
		}
	}
	return sum, rows, res.Dir
}

// maxTailErrShare is the share of the last seconds' decisions that may fail after a failover or
// a kill and still count as decisions going on at the new primary. A client stuck on the old
// primary fails the hottest primary's share of the traffic (about 40% here); a loaded machine's
// own timeouts failed 1-3.5% of those seconds under the full -race suite (clean-clone CI on a
// slow day, 2026-12-05), where 1% had been the limit.
const maxTailErrShare = 0.10

// continues says the last n rows decided and failed at most maxTailErrShare of it, and logs
// the share so a passing run shows its margin.
func continues(t *testing.T, rows []results.Interval, n int) (decided, errs int64, ok bool) {
	t.Helper()
	decided, errs = tail(rows, n)
	t.Logf("last %d s: %d decided, %d errors (limit %.0f%%)", n, decided, errs, 100*maxTailErrShare)
	return decided, errs, decided > 0 && float64(errs) <= maxTailErrShare*float64(decided)
}

// tail sums the last n rows.
func tail(rows []results.Interval, n int) (decided, errs int64) {
	for _, r := range rows[max(0, len(rows)-n):] {
		decided += r.Allowed + r.Denied
		errs += r.Errors
	}
	return
}

func TestFaultKillPrimary(t *testing.T) {
	t.Parallel()
	sum, rows := runFaults(t, faultSpec(t, 10*time.Second, "faults: [{at: 3s, kind: kill-primary, target: hottest}]\n"))
	f := sum.Faults[0]
	if f.DetectedS < 3 || f.DetectedS > 5 || f.RecoveredS <= f.AtS {
		t.Errorf("fault %+v: want errors detected within 2 s of the kill and a recovery", f)
	}
	if sum.Errors.NoScript == 0 {
		t.Errorf("errors %+v: the promoted replica has no script cache: want NOSCRIPT > 0", sum.Errors)
	}
	// The failures are booked on the node that died.
	killed := strings.Fields(f.Target)[2]
	for _, n := range sum.Nodes {
		if n.Addr == killed && n.Timeout+n.Conn == 0 {
			t.Errorf("node %+v: the killed primary's calls timed out or failed to connect, want them counted on it", n)
		}
	}
	if decided, errs, ok := continues(t, rows, 2); !ok {
		t.Errorf("last 2 s: %d decided, %d errors: decisions must continue after the promotion", decided, errs)
	}
	t.Logf("kill-primary: %+v errors %+v overspend %+v", f, sum.Errors, sum.Overspend)
}

func TestFaultFailoverMovesSlots(t *testing.T) {
	t.Parallel()
	sum, rows := runFaults(t, faultSpec(t, 8*time.Second, "faults: [{at: 3s, kind: failover, target: hottest}]\n"))
	// The old primary is alive and a replica now: requests still routed to it answer MOVED.
	if sum.Errors.Moved == 0 {
		t.Errorf("errors %+v: want MOVED > 0 after a failover", sum.Errors)
	}
	if decided, errs, ok := continues(t, rows, 2); !ok {
		t.Errorf("last 2 s: %d decided, %d errors", decided, errs)
	}
}

func TestFaultScriptFlush(t *testing.T) {
	t.Parallel()
	sum, rows := runFaults(t, faultSpec(t, 5*time.Second, "faults: [{at: 2s, kind: script-flush, target: all}]\n"))
	if sum.Errors.NoScript < 3 {
		t.Errorf("noscript %d, want at least one per primary after SCRIPT FLUSH", sum.Errors.NoScript)
	}
	// A loaded test machine times out the odd decision; none may fail for NOSCRIPT.
	if e := sum.Errors; sum.Outcomes.Errors > e.Timeout+e.Conn || e.Other != 0 {
		t.Errorf("outcomes %+v errors %+v: NOSCRIPT must be answered with EVAL, not fail decisions", sum.Outcomes, sum.Errors)
	}
	if rows[2].NoScript == 0 || rows[2].Faults != 1 {
		t.Errorf("row 2 %+v: the flush and its NOSCRIPT belong to second 2", rows[2])
	}
	var noscript int64
	for _, n := range sum.Nodes {
		noscript += n.NoScript
	}
	if len(sum.Nodes) != 6 || noscript != sum.Errors.NoScript {
		t.Errorf("nodes %+v: want 6 nodes whose NOSCRIPT counts add up to %d", sum.Nodes, sum.Errors.NoScript)
	}
}

func TestFaultPauseFailOpenVersusClosed(t *testing.T) {
	t.Parallel()
	const pause = `limiter: {timeout: 20ms, breaker: {threshold: 5, cooldown: 300ms}}
cluster: {primaries: 3, replicas: 1, node_timeout: 5s}
faults: [{at: 2s, kind: pause, target: hottest, for: 2s}]
`
	open, closed := make(chan *results.Summary, 1), make(chan *results.Summary, 1)
	run := func(mode string, out chan<- *results.Summary) {
		spec := faultSpec(t, 6*time.Second, pause+"endpoints: [{name: read, weight: 1, fail: "+mode+", budget: 10ms}]\n")
		sum, _ := runFaults(t, spec)
		out <- sum
	}
	t.Run("open", func(t *testing.T) { t.Parallel(); run("open", open) })
	t.Run("closed", func(t *testing.T) { t.Parallel(); run("closed", closed) })
	t.Cleanup(func() {
		o, c := <-open, <-closed
		if o.Outcomes.FailedOpen == 0 || o.Overspend.Requests == 0 || o.Outcomes.Errors != 0 {
			t.Errorf("fail open: outcomes %+v overspend %+v: want failed_open > 0, overspend > 0, no errors", o.Outcomes, o.Overspend)
		}
		if o.Overspend.ByCause["fail-open"] == 0 {
			t.Errorf("fail open: overspend by cause %v: want it attributed to fail-open", o.Overspend.ByCause)
		}
		if c.Outcomes.FailedClosed == 0 || c.Overspend.FalseDenies == 0 || c.Outcomes.Errors != 0 {
			t.Errorf("fail closed: outcomes %+v overspend %+v: want failed_closed > 0, false denies > 0", c.Outcomes, c.Overspend)
		}
		if c.Overspend.ByCause["fail-open"] != 0 || c.Overspend.Ratio > 1e-3 {
			t.Errorf("fail closed: overspend %+v: the pause must not cause overspend", c.Overspend)
		}
		// No multi-second stalls: the budget (10 ms) and the breaker bound every decision.
		for _, s := range []*results.Summary{o, c} {
			// 2 s: go-redis's default stall is a 5 s read timeout per attempt; the machine's own
			// stalls under the full -race suite reached 0.5-0.8 s (clean-clone CI, 2026-12-05).
			if s.LatencyMs.Max > 2000 {
				t.Errorf("max latency %.1f ms during a pause with a 10 ms budget: want no multi-second stalls", s.LatencyMs.Max)
			}
		}
	})
}

func TestFaultReshardAskThenMoved(t *testing.T) {
	t.Parallel()
	// The busiest slots move first: tenant-0's among them if node:0 serves it. ASK comes only
	// from requests inside a slot's ask window: with the default 20 ms the 20 slots drew 2-6 ASK
	// (six runs, -count=6 -v, ask_window removed: the log line below prints them) and once none
	// on a loaded CI machine; 100 ms draws 17-19.
	// 10 s: alone the 20 slots move in 1-2 s, but under the full -race suite on 2 busy cores the
	// move was still in an ask window when a 7 s run ended (2026-12-05, clean-clone CI).
	spec := faultSpec(t, 10*time.Second, "cluster: {primaries: 2, replicas: 0}\nfaults: [{at: 2s, kind: reshard, slots: 20, from: \"node:0\", to: \"node:1\", ask_window: 100ms}]\n")
	sum, _ := runFaults(t, spec)
	t.Logf("errors %+v, faults %+v", sum.Errors, sum.Faults)
	if sum.Errors.Ask == 0 || sum.Errors.Moved == 0 {
		t.Errorf("errors %+v: want ASK while slots migrate and MOVED after", sum.Errors)
	}
	// Redirects are followed: decisions fail only for the odd timeout of a loaded test machine.
	if e := sum.Errors; sum.Outcomes.Errors > e.Timeout+e.Conn {
		t.Errorf("outcomes %+v errors %+v: redirects are followed, decisions must not fail on them", sum.Outcomes, sum.Errors)
	}
}

// TestFaultLatencyAndRestart compares latencies, so it runs alone (not parallel) at a light load.
func TestFaultLatencyAndRestart(t *testing.T) {
	spec := faultSpec(t, 8*time.Second, `faults:
  - {at: 2s, kind: latency, target: hottest, delay: 20ms, jitter: 1ms, for: 2s}
  - {at: 5s, kind: restart, target: node:5}
`)
	spec.Limiter.Timeout = scenarios.Duration(500 * time.Millisecond)
	spec.Load.Rate = 300
	sum, rows, dir := runFaultsIn(t, spec)
	f, err := os.Open(filepath.Join(dir, results.LatencyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	log, err := results.ReadLatencyLog(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	secs := log.Seconds
	// 20 ms ± 1 ms each way on the hottest primary (about 40% of the traffic): while the fault
	// lasts its requests take at least 2 x (20 - 1) = 38 ms, so the 70th percentile lies among
	// them, and it must go away after. Not 40 ms: the jitter is uniform, so the delayed requests'
	// lower quartile, where the p70 falls, lies below the mean of 40 ms.
	// Not the p90: under -race on 2 busy cores the machine's own stalls reach 10-20% of a quiet
	// second's decisions (p90 up to 98 ms in seconds without the fault, 2026-12-05), while its p70 stayed at
	// 0.8-1.0 ms and rose to about 40 ms during the fault. Each side is the lower of two
	// seconds' p70: the fault raises both of its seconds, while a stall of the machine, with
	// other packages' tests beside it, took over a third of one quiet second (p70 22 ms in a
	// clean-clone CI). Compared with the seconds around it rather than absolute numbers alone:
	// the proxy itself adds milliseconds.
	p70 := func(secs2 ...int) float64 {
		low := math.Inf(1)
		for _, sec := range secs2 {
			h := secs[sec]
			if h == nil {
				t.Fatalf("no latency histogram for second %d (%d seconds written)", sec, len(secs))
			}
			low = math.Min(low, h.QuantileMs(70))
		}
		return low
	}
	n := len(rows)
	before, during, after := p70(0, 1), p70(2, 3), p70(n-2, n-1)
	t.Logf("p70 before %.1f ms, during %.1f ms, at the end %.1f ms (p90 of those seconds: %.1f/%.1f, %.1f/%.1f, %.1f/%.1f ms)",
		before, during, after, rows[0].P90Ms, rows[1].P90Ms, rows[2].P90Ms, rows[3].P90Ms, rows[n-2].P90Ms, rows[n-1].P90Ms)
	if during < 38 || 2*before > during || 2*after > during {
		t.Errorf("p70 before %.1f ms, during %.1f ms, at the end %.1f ms: want the delay (2 x (20 - 1) ms at least) only during the fault", before, during, after)
	}
	if sum.Faults[1].Kind != string(scenarios.FaultRestart) {
		t.Errorf("faults %+v", sum.Faults)
	}
}

// TestFaultSoakCI runs the built-in soak cut to 28 s: every fault recovers, no goroutine leaks, memory
// stays bounded, and the SLO verdict says so.
//
// Not parallel: the footprint (live heap, goroutines) is the whole test process's, so another
// run in the same process would be counted as this one's growth. Go runs the sequential tests
// alone, before releasing the parallel ones.
func TestFaultSoakCI(t *testing.T) {
	spec, err := scenarios.Builtin("soak-ci")
	if err != nil {
		t.Fatal(err)
	}
	sum, rows := runFaults(t, spec)
	for _, c := range sum.SLO.Checks {
		t.Logf("slo %s %g: %g pass=%v", c.Name, c.Limit, c.Value, c.Pass)
	}
	if len(sum.SLO.Checks) != 3 || !sum.SLO.Pass || sum.Process.HeapWarmMB <= 0 || sum.Process.GoroutinesEnd <= 0 {
		for _, r := range rows {
			t.Logf("second %d: sent %d ok %d timeout %d conn %d moved %d ask %d noscript %d clusterdown %d errors %d p99 %.1f ms",
				int(r.TS), r.Sent, r.Allowed+r.Denied, r.Timeout, r.Conn, r.Moved, r.Ask, r.NoScript, r.ClusterDown, r.Errors, r.P99Ms)
		}
		t.Errorf("slo %+v process %+v faults %+v: want all three soak checks to pass", sum.SLO, sum.Process, sum.Faults)
	}
	// The footprint's four samples (slo.warmup 9s: early at a tenth, warm-up after the first
	// fault, mid halfway from there to the end) and the runtime's split of warm-up and end.
	p := sum.Process
	if p.EarlyS != 2 || p.WarmS != 9 || p.MidS != 19 || p.RSSEarlyMB <= 0 || p.AnonEarlyMB < 0 {
		t.Errorf("process %+v: want samples at 2 s (early), 9 s (slo.warmup) and 19 s (mid)", p)
	}
	if !p.Settled || p.RSSMidMB <= 0 || p.Warm == nil || p.End == nil || p.Warm.HeapInuseMB < p.HeapWarmMB || p.End.HeapInuseMB < p.HeapEndMB || p.End.StacksMB <= 0 {
		t.Errorf("process %+v warm %+v end %+v: want settled samples (soak-ci has a heap_growth scenarios.SLO), a halfway RSS sample and heap in use >= the live heap at both ends", p, p.Warm, p.End)
	}
}

// TestFaultCoalesceTransport runs the fault tests' scenarios with transport: coalesce:
// a failover is seen and decisions go on at the new primary, redirects followed inside a
// pipeline are still counted on the nodes (ASK then MOVED during a reshard), NOSCRIPT after a flush or a promotion is answered with EVAL
// and counted, decisions go on after a primary dies, and the summary says which transport ran.
func TestFaultCoalesceTransport(t *testing.T) {
	t.Parallel()
	const co = "limiter: {transport: coalesce}\n"
	for _, tt := range []struct {
		name  string
		dur   time.Duration
		extra string
		check func(t *testing.T, e errorsSeen)
	}{
		// A coalescing client has one pipeline in flight per node: the one blocked by the
		// failover's write pause times out, the timeout makes the driver re-read the slot map,
		// and when that read lands after the switch no command ever reaches the old primary, so
		// no MOVED (seen once in CI on 2 busy cores). The failover must still be noticed, as
		// MOVED or as timeouts, and decisions must go on at the new primary. That redirects
		// inside a pipeline are counted is asserted by reshard below, where MOVED is certain.
		// 10 s: in an 8 s run under the full -race suite on 2 busy cores, 144 of the last 2 s's
		// 1,027 decisions still failed (clean-clone CI, 2026-12-05; alone it passed 3 of 3).
		{"failover", 10 * time.Second, "faults: [{at: 3s, kind: failover, target: hottest}]\n", func(t *testing.T, e errorsSeen) {
			if e.moved == 0 && e.timeoutOrConn == 0 {
				t.Errorf("MOVED %d, timeouts or connection errors %d after a failover: want it seen", e.moved, e.timeoutOrConn)
			}
			if !e.tailOK {
				t.Errorf("last 2 s: %d decided, %d errors: decisions must continue after the failover", e.tailDecided, e.tailErrs)
			}
		}},
		{"script-flush", 5 * time.Second, "faults: [{at: 2s, kind: script-flush, target: all}]\n", func(t *testing.T, e errorsSeen) {
			if e.noscript < 3 || e.nodeNoScript != e.noscript {
				t.Errorf("NOSCRIPT %d (nodes %d): want at least one per primary, counted on the nodes", e.noscript, e.nodeNoScript)
			}
			if e.failed > e.timeoutOrConn || e.other != 0 {
				t.Errorf("%d failed decisions, %d timeouts or connection errors, %d other: NOSCRIPT must be answered with EVAL", e.failed, e.timeoutOrConn, e.other)
			}
		}},
		{"kill-primary", 10 * time.Second, "faults: [{at: 3s, kind: kill-primary, target: hottest}]\n", func(t *testing.T, e errorsSeen) {
			if e.noscript == 0 {
				t.Errorf("NOSCRIPT %d: the promoted replica has no script cache", e.noscript)
			}
			if !e.tailOK {
				t.Errorf("last 2 s: %d decided, %d errors: decisions must continue after the promotion", e.tailDecided, e.tailErrs)
			}
		}},
		{"reshard", 7 * time.Second, "cluster: {primaries: 2, replicas: 0}\nfaults: [{at: 2s, kind: reshard, slots: 20, from: \"node:0\", to: \"node:1\"}]\n", func(t *testing.T, e errorsSeen) {
			if e.ask == 0 || e.moved == 0 {
				t.Errorf("ASK %d, MOVED %d: want both counted while slots migrate and after", e.ask, e.moved)
			}
			// go-redis follows at most MaxRedirects (3) per command, with a backoff between
			// tries; on 2 busy CI cores one decision in ~7,000 once ran out of them while the
			// two nodes' slot maps converged. More than one in 1,000 means they are not followed.
			if unfollowed := e.failed - e.timeoutOrConn; unfollowed*1000 > e.decided {
				t.Errorf("%d failed decisions, %d timeouts or connection errors, %d decided: redirects must be followed", e.failed, e.timeoutOrConn, e.decided)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sum, rows := runFaults(t, faultSpec(t, tt.dur, co+tt.extra))
			if !strings.Contains(sum.Environment.Mode, "coalescing") {
				t.Fatalf("mode %q: want the coalescing transport named", sum.Environment.Mode)
			}
			e := errorsSeen{moved: sum.Errors.Moved, ask: sum.Errors.Ask, noscript: sum.Errors.NoScript, other: sum.Errors.Other,
				failed: sum.Outcomes.Errors, decided: sum.Outcomes.Allowed + sum.Outcomes.Denied + sum.Outcomes.Errors, timeoutOrConn: sum.Errors.Timeout + sum.Errors.Conn}
			for _, n := range sum.Nodes {
				e.nodeNoScript += n.NoScript
			}
			e.tailDecided, e.tailErrs, e.tailOK = continues(t, rows, 2)
			tt.check(t, e)
			if sum.Central.Ops == 0 {
				t.Errorf("central ops 0: the pipelines' commands must count as central ops")
			}
			t.Logf("%s with coalesce: errors %+v overspend %+v", tt.name, sum.Errors, sum.Overspend)
		})
	}
}

type errorsSeen struct {
	moved, ask, noscript, nodeNoScript, other, failed, decided, timeoutOrConn, tailDecided, tailErrs int64

	// tailOK: the last 2 s decided, failing at most maxTailErrShare (continues).
	tailOK bool
}
