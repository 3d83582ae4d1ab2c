package engine

import (
	"context"
	"math"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios"
)

// regionSpec is a small three-region scenario on local 1x0 clusters: 60 tenants, a tight
// policy so the hot tenants are denied, 80% of a tenant's traffic from its home region.
func regionSpec(t *testing.T, design string, dur time.Duration) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Parse("test", []byte(`
name: regions-test
seed: 3
load: {rate: 800, concurrency: 64, max_inflight: 1024}
tenants: {count: 60, theta: 0.99}
policy: {rate: 20, burst: 20}
limiter: {timeout: 400ms}
cluster: {primaries: 1, replicas: 0}
regions:
  design: split
  list: [{name: us, share: 0.5}, {name: eu, share: 0.3}, {name: ap, share: 0.2}]
  rtt: 40ms
  jitter: 2ms
  budget: 300ms
  affinity: 0.8
`))
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = scenarios.Duration(dur)
	s.Regions.Design = design
	if design == scenarios.DesignRebalance {
		s.Regions.Period = scenarios.Duration(500 * time.Millisecond)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// runRegions runs spec and returns its summary, checked for the regions' bookkeeping.
func runRegions(t *testing.T, spec *scenarios.Spec) *results.Summary {
	t.Helper()
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sum, rows := readRun(t, res.Dir)
	checkConsistent(t, sum, rows)
	checkRegions(t, sum)
	return sum
}

// checkRegions asserts that the regions' accounts add up to the run's.
func checkRegions(t *testing.T, sum *results.Summary) {
	t.Helper()
	rg := sum.Regions
	if rg == nil || len(rg.List) != 3 || rg.Home != "us" {
		t.Fatalf("summary.regions = %+v, want us, eu, ap with us home", rg)
	}
	var offered, allowed, denied, over, fd int64
	for _, g := range rg.List {
		offered += g.Offered
		allowed += g.Allowed
		denied += g.Denied
		over += g.Overspend
		fd += g.FalseDenies
	}
	o := sum.Outcomes
	if offered != sum.Load.Offered || allowed != o.Allowed+o.FailedOpen || denied != o.Denied+o.FailedClosed {
		t.Errorf("regions add up to offered %d allowed %d denied %d; the run has offered %d, outcomes %+v", offered, allowed, denied, sum.Load.Offered, o)
	}
	if over != sum.Overspend.Requests {
		t.Errorf("regions' overspend adds up to %d, the run's is %d", over, sum.Overspend.Requests)
	}
	if fd < sum.Overspend.FalseDenies {
		t.Errorf("regions' false denies add up to %d, below the run's %d (the regions count them before withdrawals)", fd, sum.Overspend.FalseDenies)
	}
}

// TestRegionsSplitKeepsTheGlobalEnvelope runs one trace through the split design and through the
// naive one where every region's bucket holds the full limit: the one checker over all regions
// finds the naive design's excess (so the check can fail) and next to none in split. The same
// seed gives every request the same region in both runs.
func TestRegionsSplitKeepsTheGlobalEnvelope(t *testing.T) {
	t.Parallel()
	split := runRegions(t, regionSpec(t, scenarios.DesignSplit, 3*time.Second))
	naive := runRegions(t, regionSpec(t, scenarios.DesignIndependent, 3*time.Second))
	for i := range split.Regions.List {
		if a, b := split.Regions.List[i], naive.Regions.List[i]; a.Offered != b.Offered || a.Offered == 0 {
			t.Errorf("region %s offered %d in split, %d in independent: the same seed must give the same regions", a.Name, a.Offered, b.Offered)
		}
	}
	if r := split.Overspend.Ratio; r > 0.002 {
		t.Errorf("split overspend ratio %.4f (%d requests): the regions' shares add up to one quota", r, split.Overspend.Requests)
	}
	if r := naive.Overspend.Ratio; r < 0.03 || naive.Overspend.Requests < 50 {
		t.Errorf("independent overspend ratio %.4f (%d requests): three full buckets per tenant should overspend the global limit", r, naive.Overspend.Requests)
	}
	if split.Regions.CrossRegionCallsPerS != 0 {
		t.Errorf("split made %.1f cross-region calls/s; its decisions stay in their region", split.Regions.CrossRegionCallsPerS)
	}
}

// TestRegionsGlobalPaysTheRoundTrip: in design global the remote regions' decisions cross to the
// home cluster through forwarders holding rtt/2 each way, the home region's do not.
func TestRegionsGlobalPaysTheRoundTrip(t *testing.T) {
	t.Parallel()
	spec := regionSpec(t, scenarios.DesignGlobal, 3*time.Second)
	sum := runRegions(t, spec)
	rtt := float64(time.Duration(spec.Regions.RTT)) / 1e6
	for i, g := range sum.Regions.List {
		switch {
		case i == 0 && float64(g.P50Ms) >= rtt:
			t.Errorf("home region %s p50 %.1f ms, want below the round trip %.0f ms", g.Name, g.P50Ms, rtt)
		case i > 0 && float64(g.P50Ms) < rtt:
			t.Errorf("remote region %s p50 %.1f ms, want at least the round trip %.0f ms", g.Name, g.P50Ms, rtt)
		case i > 0 && sum.Load.Dropped == 0 && g.CrossRegionCalls != g.Offered:
			t.Errorf("remote region %s: %d cross-region calls for %d offered, nothing dropped: every decision crosses", g.Name, g.CrossRegionCalls, g.Offered)
		case i == 0 && g.CrossRegionCalls != 0:
			t.Errorf("home region %s made %d cross-region calls", g.Name, g.CrossRegionCalls)
		}
	}
	if sum.Overspend.Ratio > 0.01 {
		t.Errorf("global overspend ratio %.4f: one bucket per tenant is the envelope itself", sum.Overspend.Ratio)
	}
}

// TestRegionPickIsSeededAndFollowsAffinity: a request's region is a function of the seed, its
// start and its tenant; with affinity a the home region gets about a + (1-a) x its share.
func TestRegionPickIsSeededAndFollowsAffinity(t *testing.T) {
	t.Parallel()
	spec := regionSpec(t, scenarios.DesignSplit, time.Second)
	rr := newRegionRun(spec, tenantNames(60))
	again := newRegionRun(spec, tenantNames(60))
	other := *spec
	other.Seed++
	moved := newRegionRun(&other, tenantNames(60))
	counts := make([]int, 3)
	differ := 0
	const n = 30000
	for i := range n {
		off := time.Duration(i) * time.Millisecond
		r := rr.pick(off, 1) // tenant 1's home is eu
		if r != again.pick(off, 1) {
			t.Fatalf("pick(%v, 1) differs between two runs of one seed", off)
		}
		if r != moved.pick(off, 1) {
			differ++
		}
		counts[r]++
	}
	want := []float64{0.2 * 0.5, 0.8 + 0.2*0.3, 0.2 * 0.2}
	for r, c := range counts {
		if got := float64(c) / n; math.Abs(got-want[r]) > 0.015 {
			t.Errorf("region %d got %.3f of tenant 1's requests, want %.3f", r, got, want[r])
		}
	}
	if differ < n/10 {
		t.Errorf("another seed moved only %d of %d requests to another region", differ, n)
	}
}

// TestRebalanceRule checks the rule on one period's counts: shares follow demand with smoothing,
// never below the floor, sum to one, and a region that did not report keeps its share.
func TestRebalanceRule(t *testing.T) {
	t.Parallel()
	rr := &regionRun{regions: make([]*region, 3), quota: newQuotaShares(2, []float64{0.5, 0.3, 0.2})}
	b := newRebalancer(rr, time.Second)
	// Tenant 0: all demand in region 1. Tenant 1: no demand (keeps its shares).
	next := b.shares([][]int64{{0, 0}, {100, 0}, {0, 0}}, []bool{true, true, true})
	sum := next[0][0] + next[1][0] + next[2][0]
	if math.Abs(sum-1) > 1e-9 || next[1][0] <= 0.3 || next[0][0] < rebalanceFloor*0.9 || next[2][0] < rebalanceFloor*0.9 {
		t.Errorf("tenant 0's shares %v (sum %v): want region 1 above 0.3, none below the floor, sum 1", []float64{next[0][0], next[1][0], next[2][0]}, sum)
	}
	if next[0][1] != 0.5 || next[1][1] != 0.3 || next[2][1] != 0.2 {
		t.Errorf("tenant 1 had no demand; its shares moved to %v", []float64{next[0][1], next[1][1], next[2][1]})
	}
	// Region 2 cut off: it keeps 0.2, the others share 0.8 by their demand.
	next = b.shares([][]int64{{30, 0}, {10, 0}, {999, 0}}, []bool{true, true, false})
	if next[2] != nil {
		t.Errorf("a region that did not report got new shares %v", next[2])
	}
	if got := next[0][0] + next[1][0]; math.Abs(got-0.8) > 1e-9 || next[0][0] <= next[1][0] {
		t.Errorf("with region 2 frozen at 0.2, regions 0 and 1 got %v and %v, want them to sum to 0.8 with region 0 ahead", next[0][0], next[1][0])
	}
}

// TestScaledPolicyNeverExceedsTheQuota: the regions' scaled bursts add up to at most the
// policy's, each at least one token.
func TestScaledPolicyNeverExceedsTheQuota(t *testing.T) {
	t.Parallel()
	p := limiter.BucketPolicy{Rate: 50, Burst: 100}
	var burst int64
	var rate float64
	for _, sh := range []float64{0.5, 0.3, 0.2} {
		q := scaled(p, sh)
		burst += q.Burst
		rate += q.Rate
	}
	if burst != 100 || math.Abs(rate-50) > 1e-9 {
		t.Errorf("scaled shares add up to rate %v burst %d, want 50 and 100", rate, burst)
	}
	if q := scaled(limiter.BucketPolicy{Rate: 1, Burst: 3}, 0.01); q.Burst != 1 {
		t.Errorf("a tiny share's burst is %d, want at least 1 token", q.Burst)
	}
}

// TestRebalanceRoundFreezesACutRegion runs one rebalance round by hand: the regions that report
// get shares that follow their demand (after the update's one-way trip), a cut region's shares
// stay as they were, and its report and update are not counted as calls.
func TestRebalanceRoundFreezesACutRegion(t *testing.T) {
	t.Parallel()
	spec := regionSpec(t, scenarios.DesignRebalance, time.Second)
	rr := newRegionRun(spec, tenantNames(60))
	b := newRebalancer(rr, time.Second)
	rr.regions[2].cut.Store(true) // ap
	rr.regions[1].demand[0].Store(90)
	rr.regions[0].demand[0].Store(10)
	rr.regions[2].demand[0].Store(500)
	b.round()
	// The updates land after their one-way trip.
	for deadline := time.Now().Add(2 * time.Second); rr.quota.get(1, 0) == 0.3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := rr.quota.get(2, 0); got != 0.2 {
		t.Errorf("cut region ap's share of tenant 0 moved to %v, want it frozen at 0.2", got)
	}
	us, eu := rr.quota.get(0, 0), rr.quota.get(1, 0)
	if math.Abs(us+eu-0.8) > 1e-9 || eu <= 0.3 || us >= 0.5 {
		t.Errorf("us %v, eu %v: want eu's share up from 0.3 toward its demand, us's down from 0.5, summing to 0.8", us, eu)
	}
	if c := rr.regions[2].stats.cross.Load(); c != 0 {
		t.Errorf("cut region ap made %d cross-region calls", c)
	}
	if c := rr.regions[1].stats.cross.Load(); c != 2 {
		t.Errorf("eu made %d cross-region calls in one round, want 2 (its report, its update)", c)
	}
}
