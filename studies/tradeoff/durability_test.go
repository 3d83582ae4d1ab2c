package tradeoff

import (
	"strings"
	"testing"
	"time"

	"ratelab/scenarios"
)

// partitionBase is a spec shaped as the partition built-in: a 20 s run whose primary is cut off
// at 6 s for 4 s, and a script flush after it.
func partitionBase(t *testing.T) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Builtin("smoke")
	if err != nil {
		t.Fatal(err)
	}
	s.Name = "partition-test"
	s.Duration = scenarios.Duration(20 * time.Second)
	s.Faults = []scenarios.FaultSpec{
		{At: scenarios.Duration(6 * time.Second), Kind: scenarios.FaultPartition, Target: "node:0", For: scenarios.Duration(4 * time.Second)},
		{At: scenarios.Duration(8 * time.Second), Kind: scenarios.FaultScriptFlush, Target: "all"},
	}
	return s
}

func sec(d scenarios.Duration) float64 { return time.Duration(d).Seconds() }

func TestWithFault(t *testing.T) {
	base := partitionBase(t)
	kept, err := WithFault(base, FaultPartition)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.Faults) != 2 || kept.Faults[0].Kind != scenarios.FaultPartition || kept.Faults[1].Kind != scenarios.FaultScriptFlush {
		t.Errorf("partition: faults %+v, want the base's", kept.Faults)
	}
	kill, err := WithFault(base, FaultKillPrimary)
	if err != nil {
		t.Fatal(err)
	}
	// The kill takes the partition's place and target; the restart its heal, after the flush.
	want := []struct {
		kind   scenarios.FaultKind
		at     float64
		target string
	}{{scenarios.FaultKillPrimary, 6, "node:0"}, {scenarios.FaultScriptFlush, 8, "all"}, {scenarios.FaultRestart, 10, "killed"}}
	if len(kill.Faults) != len(want) {
		t.Fatalf("kill-primary: faults %+v, want %d", kill.Faults, len(want))
	}
	for i, w := range want {
		f := kill.Faults[i]
		if f.Kind != w.kind || sec(f.At) != w.at || f.Target != w.target || (f.Kind == scenarios.FaultKillPrimary && f.For != 0) {
			t.Errorf("kill-primary fault %d: %s at %gs on %s for %v; want %s at %gs on %s", i, f.Kind, sec(f.At), f.Target, time.Duration(f.For), w.kind, w.at, w.target)
		}
	}
	if base.Faults[0].Kind != scenarios.FaultPartition || len(base.Faults) != 2 {
		t.Errorf("the base's faults changed: %+v", base.Faults)
	}
	// A partition healed only at the end of the run has no restart inside it.
	long := partitionBase(t)
	long.Faults[0].For = scenarios.Duration(14 * time.Second)
	if k, _ := WithFault(long, FaultKillPrimary); len(k.Faults) != 2 {
		t.Errorf("a heal at the run's end: faults %+v, want the kill and the flush only", k.Faults)
	}
	// A partition of gateways is no primary's: kill-primary leaves it, and has none to replace.
	gw := partitionBase(t)
	gw.Faults[0].Target = "gateway:0"
	if k, err := WithFault(gw, FaultKillPrimary); err == nil || k.Faults[0].Kind != scenarios.FaultPartition {
		t.Errorf("a partition of gateways: faults %+v, err %v; want it kept and an error: no primary's partition", k.Faults, err)
	}
	none := partitionBase(t)
	none.Faults = none.Faults[1:]
	if _, err := WithFault(none, FaultKillPrimary); err == nil || !strings.Contains(err.Error(), "no partition of a primary") {
		t.Errorf("no partition: %v, want an error saying so", err)
	}
}

func TestWithSetting(t *testing.T) {
	for _, c := range []struct {
		setting, durability, transport string
		minReplicas                    int
		maxLag                         time.Duration
	}{
		{SettingAsync, "async", "", 0, 0},
		{SettingWait, "wait", "", 0, 0},
		{SettingWaitPipeline, "wait-pipeline", scenarios.TransportCoalesce, 0, 0},
		{SettingMinReplicas, "async", "", 1, MinReplicasMaxLag},
	} {
		s := partitionBase(t)
		s.Cluster.MinReplicasToWrite = 2 // a setting other than min-replicas clears it
		s.Limiter.Transport = ""
		if err := WithSetting(s, c.setting); err != nil {
			t.Fatalf("%s: %v", c.setting, err)
		}
		want := c.minReplicas
		if c.setting == SettingMinReplicas {
			want = 2 // the scenario's own count is kept
		}
		if s.Limiter.Durability != c.durability || s.Limiter.Transport != c.transport || s.Cluster.MinReplicasToWrite != want ||
			time.Duration(s.Cluster.MinReplicasMaxLag) != c.maxLag || !s.Limiter.Audit {
			t.Errorf("%s: durability %q transport %q min-replicas %d lag %v audit %v; want %q %q %d %v true", c.setting,
				s.Limiter.Durability, s.Limiter.Transport, s.Cluster.MinReplicasToWrite, time.Duration(s.Cluster.MinReplicasMaxLag), s.Limiter.Audit,
				c.durability, c.transport, want, c.maxLag)
		}
	}
	// WAIT's own fields go with it: async refuses them.
	w := partitionBase(t)
	w.Limiter.Durability, w.Limiter.DurabilityReplicas, w.Limiter.DurabilityTimeout = SettingWait, 1, scenarios.Duration(time.Second)
	if err := WithSetting(w, SettingAsync); err != nil || w.Limiter.DurabilityReplicas != 0 || w.Limiter.DurabilityTimeout != 0 {
		t.Errorf("wait to async: err %v, replicas %d, timeout %v; want WAIT's fields cleared", err, w.Limiter.DurabilityReplicas, time.Duration(w.Limiter.DurabilityTimeout))
	}
	s := partitionBase(t)
	zero := 0
	s.Cluster.Replicas = &zero
	if err := WithSetting(s, SettingWait); err == nil || !strings.Contains(err.Error(), "cluster.replicas") {
		t.Errorf("wait without replicas: %v, want an error naming cluster.replicas", err)
	}
	if err := WithSetting(partitionBase(t), "sync"); err == nil || !strings.Contains(err.Error(), `"sync"`) {
		t.Errorf("unknown setting: %v, want an error naming it", err)
	}
}

func TestShortenScalesTheFaults(t *testing.T) {
	s := partitionBase(t)
	orig := s.Faults
	Shorten(s, 5*time.Second)
	if time.Duration(s.Duration) != 5*time.Second || sec(s.Faults[0].At) != 1.5 || sec(s.Faults[0].For) != 1 || sec(s.Faults[1].At) != 2 {
		t.Errorf("shortened to 5s: duration %v, faults %+v; want the partition at 1.5s for 1s, the flush at 2s", time.Duration(s.Duration), s.Faults)
	}
	if sec(orig[0].At) != 6 {
		t.Error("Shorten edited the faults it was given instead of its own copy")
	}
	for _, d := range []time.Duration{0, 20 * time.Second, time.Minute} {
		s := partitionBase(t)
		Shorten(s, d)
		if time.Duration(s.Duration) != 20*time.Second || sec(s.Faults[0].At) != 6 {
			t.Errorf("Shorten(%v): duration %v, first fault at %gs; want the run unchanged", d, time.Duration(s.Duration), sec(s.Faults[0].At))
		}
	}
}

func TestDurabilityPlan(t *testing.T) {
	base := partitionBase(t)
	plans, err := DurabilityPlan(base, nil, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != len(DurabilityFaults)*len(DurabilitySettings) {
		t.Fatalf("%d plans, want %d", len(plans), len(DurabilityFaults)*len(DurabilitySettings))
	}
	for i, p := range plans {
		f, st := DurabilityFaults[i/len(DurabilitySettings)], DurabilitySettings[i%len(DurabilitySettings)]
		if p.Run.Fault != f || p.Run.Setting != st || p.Name != f+"-"+st {
			t.Errorf("plan %d: %s (%s, %s), want %s-%s", i, p.Name, p.Run.Fault, p.Run.Setting, f, st)
		}
		if p.Run.Err != "" {
			t.Errorf("plan %s refused: %s", p.Name, p.Run.Err)
		}
		if sec(p.Spec.Faults[0].At) != 3 || string(p.Spec.Faults[0].Kind) != f || !p.Spec.Limiter.Audit {
			t.Errorf("plan %s: first fault %s at %gs, audit %v; want %s at 3s (scaled to 10s), audit on", p.Name, p.Spec.Faults[0].Kind, sec(p.Spec.Faults[0].At), p.Spec.Limiter.Audit, f)
		}
	}
	for _, c := range []struct {
		faults, settings []string
		want             string
	}{{[]string{"crash"}, nil, "--faults"}, {nil, []string{"fsync"}, "--settings"}} {
		if _, err := DurabilityPlan(base, c.faults, c.settings, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("faults %v settings %v: %v, want an error naming %s", c.faults, c.settings, err, c.want)
		}
	}
	none := partitionBase(t)
	none.Faults = none.Faults[1:]
	if _, err := DurabilityPlan(none, nil, nil, 0); err == nil || !strings.Contains(err.Error(), "no partition of a primary") {
		t.Errorf("a scenario without a partition: %v, want an error saying so before any row", err)
	}
	// A setting the cluster cannot have is its row's error; the others still plan.
	zero := 0
	base.Cluster.Replicas = &zero
	plans, err = DurabilityPlan(base, []string{FaultPartition}, []string{SettingWait}, 0)
	if err != nil || len(plans) != 1 || !strings.Contains(plans[0].Run.Err, "cluster.replicas") {
		t.Errorf("wait without replicas: plans %+v, err %v; want one plan whose error names cluster.replicas", plans, err)
	}
}
