package engine

import (
	"context"
	"os"
	"testing"
	"time"

	"ratelab/scenarios"
)

// Runs on a shared local cluster start from empty buckets: the second run of the same seed
// has no false denies, which it would have if the first run's drained buckets were left to it.
func TestSharedRunsStartEmpty(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, scenarios.KindTokenBucket, 500, 2*time.Second)
	spec.Load.Concurrency = 1 // serial: the envelope sees the decisions in Redis's order
	spec.Limiter.Timeout = scenarios.Duration(time.Second)
	sh, err := Share(context.Background(), Options{Logf: t.Logf}, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	if sh.cl == nil || sh.state == "" {
		t.Fatalf("shared %+v: want a local cluster started and handed over by a state file", sh)
	}
	for i := range 2 {
		res, err := sh.Run(context.Background(), spec, Options{Out: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum, rows := readRun(t, res.Dir)
		checkConsistent(t, sum, rows)
		if sum.Outcomes.Denied == 0 || sum.Overspend.FalseDenies != 0 || sum.Overspend.Requests != 0 {
			t.Errorf("run %d: outcomes %+v, overspend %+v: want denials, all agreed by the envelope of full buckets", i, sum.Outcomes, sum.Overspend)
		}
		if sum.Environment.Provider != string(scenarios.ProviderLocal) || sum.Environment.Primaries != 2 {
			t.Errorf("run %d: environment %+v: want the shared local cluster of 2 primaries", i, sum.Environment)
		}
	}
	state := sh.state
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("state file %s after Close: %v; want it removed", state, err)
	}
}

// A fault on the cluster's nodes would leave the next run a changed cluster: nothing is shared.
func TestShareRefusesClusterFaults(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, scenarios.KindTokenBucket, 100, time.Second)
	spec.Faults = []scenarios.FaultSpec{{At: scenarios.Duration(500 * time.Millisecond), Kind: scenarios.FaultKillPrimary}}
	mem := testSpec(t, scenarios.KindMemory, 100, time.Second)
	for name, specs := range map[string][]*scenarios.Spec{"kill-primary": {spec}, "no cluster needed": {mem}} {
		sh, err := Share(context.Background(), Options{}, specs...)
		if err != nil {
			t.Fatal(err)
		}
		if sh.cl != nil || sh.state != "" {
			t.Errorf("%s: shared %+v, want nothing shared", name, sh)
		}
		sh.Close()
	}
}
