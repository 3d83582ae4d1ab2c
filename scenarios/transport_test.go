package scenarios

import (
	"strings"
	"testing"
	"time"
)

// TestTransportValidation: limiter.transport is plain (the default) or coalesce, and coalesce
// applies to kind token-bucket only; errors name the field and the fix.
func TestTransportValidation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, limiter, want string
	}{
		{"default", "{kind: token-bucket}", ""},
		{"coalesce", "{kind: token-bucket, transport: coalesce}", ""},
		{"unknown", "{kind: token-bucket, transport: pipelined}", `limiter.transport: "pipelined"`},
		{"lease", "{kind: lease, transport: coalesce}", "limiter.transport: coalesce"},
		{"gcra", "{kind: gcra, transport: coalesce}", "limiter.transport: coalesce"},
	} {
		// Parse validates.
		s, err := Parse("t", []byte("name: t\nload: {rate: 100}\ntenants: {count: 10}\npolicy: {rate: 10, burst: 20}\nlimiter: "+tt.limiter+"\n"))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: have %v, want an error containing %q", tt.name, err, tt.want)
		case tt.want == "" && err == nil && s.Limiter.Transport != TransportPlain && !strings.Contains(tt.limiter, "coalesce"):
			t.Errorf("%s: transport %q, want the default %q", tt.name, s.Limiter.Transport, TransportPlain)
		}
	}
}

// TestCoalesceTransportUnderFaults runs the fault tests' scenarios with transport: coalesce:
// a failover is seen and decisions go on at the new primary, redirects followed inside a
// pipeline are still counted on the nodes (ASK then MOVED during a reshard), NOSCRIPT after a flush or a promotion is answered with EVAL
// and counted, decisions go on after a primary dies, and the summary says which transport ran.
func TestCoalesceTransportUnderFaults(t *testing.T) {
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
