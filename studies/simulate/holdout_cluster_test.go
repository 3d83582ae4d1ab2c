package simulate

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/scenarios"
)

// The held-out validation's node shares on a real 3-primary cluster: the script calls each
// primary counted (INFO commandstats, read one node at a time) against the model's shares from
// exact slot hashing, under Zipf 1.2 (28/43/28% on 1,000 tenants, so a primary order that did
// not match the model's primaries would miss by over 10 points). 8,000 calls put a share's
// sampling error near half a point; the tolerance is the validation's own.
func TestNodeSharesMatchSlotHashing(t *testing.T) {
	cl := clustertest.Start(t, cluster.Options{Primaries: 3, Replicas: cluster.NoReplicas})
	spec, err := scenarios.Parse("simulate-validate", []byte(ValidateScenario))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, state, err := saveState(cl, dir)
	if err != nil {
		t.Fatal(err)
	}
	cr := &clusterRuns{cl: cl, state: state, out: filepath.Join(dir, "runs"), logf: t.Logf}
	for _, n := range cl.Primaries() {
		cr.addrs = append(cr.addrs, n.Addr)
	}
	s := onePrimary(spec, 3)
	s.Duration = scenarios.Duration(2 * time.Second)
	s.Tenants.Theta = 1.2
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cr.run(ctx, "shares", s, 4000)
	if err != nil {
		t.Fatal(err)
	}
	calls := r.calls()
	total := float64(sumInt(calls))
	if total < 4000 {
		t.Fatalf("calls by primary %v: want at least 4,000 in all", calls)
	}
	measured := make([]float64, len(calls))
	for i, c := range calls {
		measured[i] = float64(c) / total
	}
	model, err := modelShares(spec.Tenants.Count, 1.2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if e := pointsError(model, measured); e > ShareTolerancePoints {
		t.Errorf("shares by primary: measured %.3f, model %.3f: %.1f points apart, want at most %v", measured, model, e, ShareTolerancePoints)
	}
}
