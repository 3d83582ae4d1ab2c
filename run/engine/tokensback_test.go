package engine

import (
	"context"
	"testing"

	"ratelab/limiter"
	"ratelab/results"

	"ratelab/cluster"
	"ratelab/run/faults"
)

func TestCountBack(t *testing.T) {
	t.Parallel()
	counts := []backCounts{
		{allowed: 10, debited: 10},            // nothing lost
		{allowed: 10, debited: 7},             // 3 lost for sure
		{allowed: 10, debited: 9, unknown: 4}, // 1 lost; up to 5 if every timeout debited
		{allowed: 5, debited: 6, unknown: 3},  // a timeout debited: 0 lost for sure, up to 2
		{allowed: 2, debited: 0, unknown: 10}, // at most what was allowed
		{allowed: 4, debited: 1},              // lost on a slot no fault touched
	}
	slots := []int{0, 10, 10, 20, 20, 9000}
	losses := []faults.Loss{
		{Fault: "kill-primary hottest", Slots: []cluster.SlotRange{{Start: 0, End: 15}}, Bound: 5},
		{Fault: "partition node:0", Slots: []cluster.SlotRange{{Start: 10, End: 100}}, Bound: 20},
	}
	tb := countBack(counts, func(k int) int { return slots[k] }, losses)
	if tb.Min != 3+1+0+2+3 {
		t.Errorf("Min = %d, want 9", tb.Min)
	}
	if tb.Max != 3+5+2+2+3 {
		t.Errorf("Max = %d, want 15", tb.Max)
	}
	if tb.Keys != 4 {
		t.Errorf("Keys = %d, want 4 (keys with Min > 0)", tb.Keys)
	}
	if tb.Bound != 25 || tb.Verdict != results.VerdictWithin {
		t.Errorf("Bound = %v, verdict %q; want 25 and within (15 <= 25)", tb.Bound, tb.Verdict)
	}
	want := map[string]int64{"partition node:0": 3 + 1 + 2, "none": 3}
	if len(tb.ByFault) != len(want) {
		t.Errorf("ByFault = %v, want %v", tb.ByFault, want)
	}
	for k, v := range want {
		if tb.ByFault[k] != v {
			t.Errorf("ByFault[%q] = %d, want %d (all %v)", k, tb.ByFault[k], v, tb.ByFault)
		}
	}
	none := countBack([]backCounts{{allowed: 3, debited: 3, unknown: 1}}, func(int) int { return 0 }, nil)
	if none.Min != 0 || none.Max != 1 || none.Verdict != results.VerdictUndetermined || none.ByFault != nil {
		t.Errorf("without faults: %+v, want Min 0, Max 1, undetermined against a bound of 0, no by_fault", none)
	}
	beyond := countBack([]backCounts{{allowed: 3, debited: 1}}, func(int) int { return 0 }, nil)
	if beyond.Min != 2 || beyond.Verdict != results.VerdictBeyond {
		t.Errorf("a certain loss without a fault: %+v, want Min 2 and beyond a bound of 0", beyond)
	}
}

// TestTokensBackReadsTheRecords: tokens back counts what the records classify — the store's own
// allowed decisions as allowed, every decision the store may have debited unseen (a timeout, an
// allowed decision's short WAIT, a fail policy's answer to one) as unknown — and nothing for
// refusals (NOREPLICAS, CLUSTERDOWN), a denial whose WAIT fell short, or a fail policy's own
// allowance.
func TestTokensBackReadsTheRecords(t *testing.T) {
	t.Parallel()
	b := newClientDebits([]string{"tenant-0"}, []string{"read"}, "")
	recs := []Record{
		{Cost: 2, Err: replyErr("NOREPLICAS Not enough good replicas to write.")},
		{Cost: 4, Err: replyErr("CLUSTERDOWN The cluster is down")},
		{Cost: 3, Err: context.DeadlineExceeded},
		{Cost: 5, Decision: limiter.Decision{Allowed: true, Source: limiter.Central}},
		{Cost: 6, Err: limiter.ErrUnreplicated},
		{Cost: 1, Decision: limiter.Decision{Allowed: false, Source: limiter.Central, Unreplicated: true}},
		{Cost: 7, Decision: limiter.Decision{Allowed: true, Source: limiter.FailOpen,
			Failure: limiter.Failure{Failed: true, Kind: limiter.KindConn}}},
		{Cost: 8, Decision: limiter.Decision{Source: limiter.FailClosed,
			Failure: limiter.FailureOf(context.DeadlineExceeded)}},
	}
	for i := range recs {
		Classify(&recs[i])
		b.Consume(&recs[i])
	}
	if a, u := b.allowed[0].Load(), b.unknown[0].Load(); a != 5 || u != 17 {
		t.Errorf("allowed %d, unknown %d; want 5 and 17 (the timeout's 3, the short WAIT's 6, the fail-closed answer's 8)", a, u)
	}
}

// replyErr is an error reply as go-redis returns one (a redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}
