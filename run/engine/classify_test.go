package engine

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/check"
)

// TestClassify: every answer a driver can get comes to one outcome, and the store may have
// debited exactly the calls whose answer never came back after they could have run — also when
// a fail policy answered them; a short WAIT keeps the script's answer, a denial included.
func TestClassify(t *testing.T) {
	t.Parallel()
	timeout := limiter.FailureOf(context.DeadlineExceeded)
	for _, c := range []struct {
		name    string
		d       limiter.Decision
		err     error
		want    Outcome
		unknown bool
	}{
		{"allowed", limiter.Decision{Allowed: true}, nil, OutcomeAllowed, false},
		{"denied", limiter.Decision{}, nil, OutcomeDenied, false},
		{"short WAIT, denied", limiter.Decision{Unreplicated: true}, nil, OutcomeDenied, false},
		{"short WAIT, allowed", limiter.Decision{}, limiter.ErrUnreplicated, OutcomeError, true},
		{"fail-closed on a short WAIT", limiter.Decision{Source: limiter.FailClosed, Failure: limiter.FailureOf(limiter.ErrUnreplicated)}, nil, OutcomeFailedClosed, true},
		{"timeout", limiter.Decision{}, context.DeadlineExceeded, OutcomeError, true},
		{"reset after the write", limiter.Decision{}, &net.OpError{Op: "read", Err: syscall.ECONNRESET}, OutcomeError, true},
		{"EOF", limiter.Decision{}, io.EOF, OutcomeError, true},
		{"refused", limiter.Decision{}, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, OutcomeError, false},
		{"fail-closed on a timeout", limiter.Decision{Source: limiter.FailClosed, Failure: timeout}, nil, OutcomeFailedClosed, true},
		{"fail-open on a timeout", limiter.Decision{Allowed: true, Source: limiter.FailOpen, Failure: timeout}, nil, OutcomeFailedOpen, true},
		{"fail-open on CLUSTERDOWN", limiter.Decision{Allowed: true, Source: limiter.FailOpen,
			Failure: limiter.Failure{Failed: true, Kind: limiter.KindClusterDown}}, nil, OutcomeFailedOpen, false},
		{"breaker short circuit", limiter.Decision{Source: limiter.FailClosed}, nil, OutcomeFailedClosed, false},
		{"gateway 503 on a timeout", limiter.Decision{}, &limiter.RemoteError{Kind: limiter.KindTimeout, MayHaveDebited: true}, OutcomeError, true},
	} {
		r := Record{Decision: c.d, Err: c.err}
		Classify(&r)
		if r.Outcome != c.want || r.MayHaveDebited != c.unknown {
			t.Errorf("%s: outcome %d, may have debited %v; want %d, %v", c.name, r.Outcome, r.MayHaveDebited, c.want, c.unknown)
		}
	}
}

// TestFailPolicyAnswersAreUnknownOutcomes is the reading of pause-fail-closed: timeouts a fail
// policy answered were no unknown outcomes and the false-deny range had no width. Here a
// fail-closed refusal on a full bucket the store may have debited is an unknown outcome, the
// false deny it makes is possible, not confirmed (the store may have spent its token), and the
// account counts it among the unknowns.
func TestFailPolicyAnswersAreUnknownOutcomes(t *testing.T) {
	t.Parallel()
	c := check.NewBucket(1, func(int) limiter.BucketPolicy { return limiter.BucketPolicy{Rate: 1, Burst: 1} })
	acc := NewAccount()
	r := Record{Cost: 1, Decision: limiter.Decision{Source: limiter.FailClosed, RetryAfter: time.Second,
		Failure: limiter.FailureOf(context.DeadlineExceeded)}}
	Classify(&r)
	r.Verdict = Observe(c, &r, 1_000, check.Cause(limiter.FailClosed))
	acc.Book(&r)
	// A second request at the same moment, denied by the store.
	r2 := Record{Cost: 1, Decision: limiter.Decision{Source: limiter.Central}}
	Classify(&r2)
	r2.Verdict = Observe(c, &r2, 1_000, check.Cause(limiter.Central))
	acc.Book(&r2)
	tot := c.Totals()
	// One token: if the store did not debit the first, one of the two denials was false (N);
	// if it did, neither (D). Judged as a plain denial, the first was a confirmed false deny.
	if tot.FalseDenies != 0 || tot.PossibleFalseDenies != 1 || acc.Unknown() != 1 {
		t.Fatalf("false denies %d..%d, unknown %d; want 0..1 and 1",
			tot.FalseDenies, tot.PossibleFalseDenies, acc.Unknown())
	}
	sum := results.NewSummary("t", 1, time.Now())
	acc.FillSummary(sum)
	if sum.Outcomes.FailedClosed != 1 || sum.Outcomes.Denied != 1 || sum.Errors.Timeout != 1 {
		t.Fatalf("outcomes %+v, errors %+v; want 1 failed closed, 1 denied, the timeout a policy answered counted", sum.Outcomes, sum.Errors)
	}
}

// TestLatencyOverOfferedCountsUndecided: a request that got no decision is a failure over the
// offered requests, not a served latency; with most requests refused a connection, no
// percentile of the offered ones is a small number.
func TestLatencyOverOfferedCountsUndecided(t *testing.T) {
	t.Parallel()
	acc := NewAccount()
	for i := range 100 {
		r := Record{Latency: time.Millisecond, Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
		if i < 5 {
			r = Record{Latency: time.Millisecond, Decision: limiter.Decision{Allowed: true}}
		}
		Classify(&r)
		acc.Book(&r)
	}
	lat, served := results.LatencyOf(acc.Hist(), 100-acc.Decided())
	if acc.Hist().Count() != 5 || lat.P50.Measurable() || lat.Undecided != 95 || served.P50 == 0 {
		t.Fatalf("hist %d, p50 over offered %v, undecided %d, served p50 %v; want 5, not measurable, 95, 1 ms",
			acc.Hist().Count(), lat.P50, lat.Undecided, served.P50)
	}
}

// TestRegionLatencyOverOfferedRequests is the reading of regions-global under --max-inflight 4:
// a region that decided 148 of 1,802 offered requests printed a finite p99 of the decided ones.
// A region's percentiles are the run's function over the region's records and its offered
// count: a region that dropped more than 1% has no finite p99.
func TestRegionLatencyOverOfferedRequests(t *testing.T) {
	t.Parallel()
	rr := &regionRun{design: "global", names: []string{"us", "eu", "ap"}, budget: time.Second}
	for _, name := range rr.names {
		rg := &region{name: name}
		rg.stats.init()
		rr.regions = append(rr.regions, rg)
	}
	book := func(region, n int, offered int64) {
		for range n {
			r := Record{Region: region, Latency: 2 * time.Millisecond, Decision: limiter.Decision{Allowed: true}}
			Classify(&r)
			rr.consume(&r)
		}
		rr.regions[region].stats.offered.Add(offered)
	}
	book(0, 1000, 1000) // every request decided
	book(1, 980, 1000)  // 2% dropped: p50 measurable, p99 not
	book(2, 148, 1802)  // the reading: 148 of 1,802 decided, no percentile of them
	sum := rr.summary(time.Second)
	us, eu, ap := sum.List[0], sum.List[1], sum.List[2]
	if !us.P99Ms.Measurable() || !eu.P50Ms.Measurable() || eu.P99Ms.Measurable() || ap.P50Ms.Measurable() || ap.P99Ms.Measurable() {
		t.Fatalf("us p99 %v; eu p50 %v, p99 %v; ap p50 %v, p99 %v: want us measurable, eu's p50 only, none of ap's",
			us.P99Ms, eu.P50Ms, eu.P99Ms, ap.P50Ms, ap.P99Ms)
	}
}
