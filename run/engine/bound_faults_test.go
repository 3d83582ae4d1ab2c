//go:build faults

package engine

import (
	"testing"
	"time"

	"ratelab/results"
)

// TestFailoverBoundWithLag builds real replication lag before a kill: a latency fault on the
// hottest primary's proxy, which its replica replicates through, delays every byte of the
// replication stream by 200 ms, and the primary is killed while it lasts. The replication gap
// read right before the kill, on connections already open, is then non-zero; it is the
// summary's bound, with its source, and what the kill really lost (tokens back, read from the
// promoted replica's debit audit) and the overspend the lost debits let through stay within it.
// The loss does not reach the bound here: the proxy delivers the bytes it holds after the
// primary dies, so the lag it builds delays the replica without losing the debits.
func TestFailoverBoundWithLag(t *testing.T) {
	spec := faultSpec(t, 9*time.Second, `limiter: {audit: true, timeout: 1s}
faults:
  - {at: 2s, kind: latency, target: hottest, delay: 200ms, for: 4s}
  - {at: 4s, kind: kill-primary, target: hottest}
`)
	sum, _ := runFaults(t, spec)
	o := sum.Overspend
	tb := sum.TokensBack
	if tb == nil {
		t.Fatal("no tokens_back with limiter.audit")
	}
	gap := o.Bound.Sources[results.BoundReplicationGap]
	t.Logf("bound %+v (unmeasured %v); tokens back %+v; overspend %d tokens (%v); burst excess %+v", o.Bound, o.Bound.Unmeasured, *tb, o.Tokens, o.ByCause, o.BurstExcess)
	if len(o.Bound.Unmeasured) != 0 || gap <= 0 {
		t.Fatalf("bound %+v, unmeasured %v: want the replication gap read before the kill, non-zero under 200 ms of replication lag", o.Bound, o.Bound.Unmeasured)
	}
	if float64(tb.Min) > gap || tb.Bound != gap {
		t.Errorf("tokens back %d..%d, its bound %.1f: want what the kill lost within the gap %.1f", tb.Min, tb.Max, tb.Bound, gap)
	}
	if float64(o.ByCause["failover"]) > gap {
		t.Errorf("overspend attributed to the failover %d requests: want at most the gap %.1f tokens", o.ByCause["failover"], gap)
	}
}
