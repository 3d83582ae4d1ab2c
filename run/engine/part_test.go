package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/workload"
)

// partSpec is the equivalence test's scenario: a Poisson schedule over Zipf tenants against the
// in-memory token bucket with a policy whose decisions do not depend on time. The bucket refills
// 0.001 tokens/s: over a 3 s run a key gains 0.003 tokens, so every key allows exactly its first 5
// requests (its burst) and denies the rest, whenever they arrive. So allowed and denied per key,
// not only decisions, must match exactly between one run and its merged parts.
func partSpec(t *testing.T) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Parse("part-test", []byte(`
name: part-test
duration: 3s
seed: 42
load: {rate: 3000, pacer: poisson, concurrency: 8, max_inflight: 4096}
tenants: {count: 300, theta: 0.99}
endpoints: [{name: read, weight: 3}, {name: write, weight: 1}]
policy: {rate: 0.001, burst: 5}
limiter: {kind: memory}
`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readTallyFile(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.TallyFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys, err := results.ReadTally(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, k := range keys {
		out[k.Key] = k.Completed
	}
	return out
}

// Two parts of one seed, merged, give what one whole run of that seed gives.
func TestPartsMergeToTheWholeRun(t *testing.T) {
	root := t.TempDir()
	run := func(name string, sh workload.Part) *Result {
		res, err := Run(context.Background(), partSpec(t), Options{Out: filepath.Join(root, name), Part: sh})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	full := run("full", workload.Part{})
	s0 := run("part-0", workload.Part{Index: 0, Count: 2})
	s1 := run("part-1", workload.Part{Index: 1, Count: 2})
	merged, err := MergeRuns(filepath.Join(root, "merged"), s1.Dir, s0.Dir)
	if err != nil {
		t.Fatal(err)
	}
	f, m := full.Summary, merged.Summary

	// The schedule is the seed's: offered requests match exactly, second by second.
	_, fullRows := readRun(t, full.Dir)
	_, mergedRows := readRun(t, merged.Dir)
	if len(fullRows) != len(mergedRows) {
		t.Fatalf("rows: full %d, merged %d", len(fullRows), len(mergedRows))
	}
	var offered int64
	for i := range fullRows {
		offered += fullRows[i].Offered
		if fullRows[i].Offered != mergedRows[i].Offered {
			t.Errorf("second %d: offered full %d, merged %d", i, fullRows[i].Offered, mergedRows[i].Offered)
		}
	}
	if offered < 8000 {
		t.Fatalf("full run offered %d requests in 3 s at 3000/s: the schedule is wrong", offered)
	}
	if s0.Summary.Load.Completed == 0 || s1.Summary.Load.Completed == 0 {
		t.Fatalf("part decisions %d and %d: a part ran nothing", s0.Summary.Load.Completed, s1.Summary.Load.Completed)
	}
	// Part 0 owns tenant 0, the hottest: it must carry more than half of the load.
	if s0.Summary.Load.Completed <= s1.Summary.Load.Completed {
		t.Errorf("part 0 decided %d, part 1 %d: tenant 0 (the Zipf hottest) is part 0's", s0.Summary.Load.Completed, s1.Summary.Load.Completed)
	}

	drops := f.Load.Dropped + s0.Summary.Load.Dropped + s1.Summary.Load.Dropped
	if drops > 0 {
		// A generator that fell a second behind on this shared machine drops requests; then
		// which ones were decided differs, but every offered request is still accounted for.
		t.Logf("runs dropped %d requests (machine overloaded): checking accounting only", drops)
		for _, s := range []*results.Summary{f, m} {
			if s.Load.Completed+s.Load.Dropped != offered {
				t.Errorf("decisions %d + dropped %d != offered %d", s.Load.Completed, s.Load.Dropped, offered)
			}
		}
		return
	}
	t.Logf("offered %d; full: decisions %d allowed %d denied %d p99 %.3f ms; merged: decisions %d allowed %d denied %d p99 %.3f ms; parts %d + %d",
		offered, f.Load.Completed, f.Outcomes.Allowed, f.Outcomes.Denied, f.LatencyMs.P99,
		m.Load.Completed, m.Outcomes.Allowed, m.Outcomes.Denied, m.LatencyMs.P99, s0.Summary.Load.Completed, s1.Summary.Load.Completed)
	if f.Load.Completed != offered || m.Load.Completed != offered || m.Load.Sent != f.Load.Sent {
		t.Errorf("decisions: full %d, merged %d, sent %d vs %d; want all %d", f.Load.Completed, m.Load.Completed, f.Load.Sent, m.Load.Sent, offered)
	}
	if m.Outcomes != f.Outcomes {
		t.Errorf("outcomes: merged %+v, full %+v; the policy is time-independent, so they must match exactly", m.Outcomes, f.Outcomes)
	}
	if m.Overspend.Requests != f.Overspend.Requests || m.Overspend.FalseDenies != f.Overspend.FalseDenies {
		t.Errorf("overspend: merged %d/%d false denies, full %d/%d", m.Overspend.Requests, m.Overspend.FalseDenies, f.Overspend.Requests, f.Overspend.FalseDenies)
	}
	fk, mk := readTallyFile(t, full.Dir), readTallyFile(t, merged.Dir)
	if len(fk) != len(mk) {
		t.Errorf("keys with decisions: full %d, merged %d", len(fk), len(mk))
	}
	for k, n := range fk {
		if mk[k] != n {
			t.Errorf("key %s: full %d decisions, merged %d", k, n, mk[k])
		}
	}
	for i := range min(len(f.HotKeys), len(m.HotKeys)) {
		if f.HotKeys[i] != m.HotKeys[i] {
			t.Errorf("hot key %d: full %+v, merged %+v", i, f.HotKeys[i], m.HotKeys[i])
		}
	}
	if len(f.HotKeys) != len(m.HotKeys) {
		t.Errorf("hot keys: full %d, merged %d", len(f.HotKeys), len(m.HotKeys))
	}

	// Latency is the machine's, not the seed's: the merged percentiles are those of the union
	// of the two parts' recorded values.
	union := results.NewHistogram()
	for _, d := range []string{s0.Dir, s1.Dir} {
		fh, err := os.Open(filepath.Join(d, results.HistogramFile))
		if err != nil {
			t.Fatal(err)
		}
		h, err := results.ReadHistogram(fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		union.Merge(h)
	}
	if union.Count() != m.Load.Completed || m.LatencyServedMs.P99 != union.QuantileMs(99) || m.LatencyServedMs.P999 != union.QuantileMs(99.9) {
		t.Errorf("merged p99 %v p999 %v over %d; union of the parts %v %v over %d",
			m.LatencyServedMs.P99, m.LatencyServedMs.P999, m.Load.Completed, union.QuantileMs(99), union.QuantileMs(99.9), union.Count())
	}
	if m.Part == nil || m.Part.Count != 2 || len(m.Part.Merged) != 2 || !m.SLO.Pass {
		t.Errorf("merged part record %+v, scenarios.SLO %+v", m.Part, m.SLO)
	}
}

func TestCheckPartRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		part     workload.Part
		edit     func(*scenarios.Spec)
		wantText string
	}{
		{"index out of range", workload.Part{Index: 2, Count: 2}, nil, "want 0 <= index < 2"},
		{"more parts than tenants", workload.Part{Index: 0, Count: 301}, nil, "300 tenants"},
		{"cluster fault on a shared cluster", workload.Part{Index: 0, Count: 2}, func(s *scenarios.Spec) {
			s.Cluster.Provider, s.Cluster.URL = "external", "redis://127.0.0.1:7000"
			s.Faults = []scenarios.FaultSpec{{At: scenarios.Duration(time.Second), Kind: scenarios.FaultFailover}}
		}, "once per part"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := partSpec(t)
			if tt.edit != nil {
				tt.edit(s)
			}
			err := checkPart(s, Options{Part: tt.part})
			if err == nil || !strings.Contains(err.Error(), "--part "+tt.part.String()) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("checkPart = %v; want an error naming --part %s and %q", err, tt.part, tt.wantText)
			}
		})
	}
	// Gateway faults run in every part's own gateways: allowed.
	s := partSpec(t)
	s.Cluster.Provider = "external"
	s.Faults = []scenarios.FaultSpec{{At: scenarios.Duration(time.Second), Kind: scenarios.FaultClockSkew}}
	if err := checkPart(s, Options{Part: workload.Part{Index: 1, Count: 2}}); err != nil {
		t.Errorf("a gateway fault in a split run: %v", err)
	}
}
