//go:build faults

package engine

import (
	"context"
	"testing"
	"time"

	"ratelab/cluster/clustertest"
	"ratelab/results"
	"ratelab/scenarios"
)

// TestRegionsRebalanceFollowsDemand: with 80% of each tenant's traffic from its home region,
// the static split leaves a hot tenant's tokens idle in the regions it barely uses while its
// home region denies; rebalancing moves the shares toward the demand and makes fewer false
// denies on the same trace, still within the global envelope.
func TestRegionsRebalanceFollowsDemand(t *testing.T) {
	clustertest.Watch(t)
	split := runRegions(t, regionSpec(t, scenarios.DesignSplit, 4*time.Second))
	clustertest.RecordLag(t, split.Load.ScheduleLagP99Ms)
	reb := runRegions(t, regionSpec(t, scenarios.DesignRebalance, 4*time.Second))
	clustertest.RecordLag(t, reb.Load.ScheduleLagP99Ms)
	s, r := split.Overspend.FalseDenies, reb.Overspend.FalseDenies
	t.Logf("false denies: split %d, rebalance %d; overspend: split %d, rebalance %d", s, r, split.Overspend.Requests, reb.Overspend.Requests)
	if s < 100 || float64(r) > 0.8*float64(s) {
		t.Errorf("false denies: split %d, rebalance %d; want rebalance at most 80%% of split's (and split's at least 100)", s, r)
	}
	if reb.Overspend.Ratio > 0.01 {
		t.Errorf("rebalance overspend ratio %.4f (%d requests): the shares still add up to one quota", reb.Overspend.Ratio, reb.Overspend.Requests)
	}
	if reb.Regions.PeriodS != 0.5 || reb.Regions.CrossRegionCallsPerS <= 0 {
		t.Errorf("rebalance period %v s, %.1f cross-region calls/s; want 0.5 s and the reports and updates counted", reb.Regions.PeriodS, reb.Regions.CrossRegionCallsPerS)
	}
}

// TestRegionsCutRegionFailsItsGlobalDecisions cuts eu off for 1.5 s of a 4 s run in design
// global with the fault partition region:eu: eu's decisions fail while the cut lasts (its
// endpoint fails open, so the fail policy answers them), then cross again after the heal; us
// and ap are not affected.
func TestRegionsCutRegionFailsItsGlobalDecisions(t *testing.T) {
	clustertest.Watch(t)
	spec := regionSpec(t, scenarios.DesignGlobal, 4*time.Second)
	spec.Endpoints = []scenarios.Endpoint{{Name: "default", Weight: 1, Fail: scenarios.FailOpen}}
	spec.Faults = []scenarios.FaultSpec{{At: scenarios.Duration(time.Second), Kind: scenarios.FaultPartition,
		Target: "region:eu", For: scenarios.Duration(1500 * time.Millisecond)}}
	spec.ApplyDefaults()
	s, err := Open(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CutRegion("mars"); err == nil {
		t.Error("CutRegion(mars) succeeded; want an error naming the regions")
	}
	m, err := s.Drive(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Finish(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Summary.Faults; len(f) != 1 || f[0].Failed || f[0].Target != "region:eu" {
		t.Errorf("faults %+v; want the one partition of region:eu, carried out", f)
	}
	clustertest.RecordLag(t, res.Summary.Load.ScheduleLagP99Ms)
	byName := map[string]results.Region{}
	for _, g := range res.Summary.Regions.List {
		byName[g.Name] = g
	}
	eu, us, ap := byName["eu"], byName["us"], byName["ap"]
	// The store's failures: errors, and the fail policy's answers (eu fails open).
	failed := func(g results.Region) int64 { return g.Errors + g.FailedOpen + g.FailedClosed }
	share := func(g results.Region) float64 { return float64(failed(g)) / float64(max(g.Offered, 1)) }
	t.Logf("failure shares: eu %.2f, us %.2f, ap %.2f; eu availability %.2f", share(eu), share(us), share(ap), eu.Availability)
	if share(eu) < 0.2 || share(eu) < share(ap)+0.1 || eu.FailedOpen == 0 {
		t.Errorf("eu: %d failed (%d answered by fail open) of %d offered (ap's share %.2f); want the decisions of the cut (about a third of the run) to fail, well above ap's",
			failed(eu), eu.FailedOpen, eu.Offered, share(ap))
	}
	if eu.Availability < 0.1 || eu.Availability > 0.9 {
		t.Errorf("eu availability %.2f; want it lost during the cut and back after the restore", eu.Availability)
	}
	// The home region decides on its own cluster: a cut eu cannot fail it.
	if share(us) > 0.02 {
		t.Errorf("us: %d failed of %d offered; the home region's decisions do not cross", failed(us), us.Offered)
	}
}
