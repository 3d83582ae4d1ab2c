package tradeoff

import (
	"strings"
	"testing"
	"time"

	"ratelab/scenarios"
)

// regionsBase is the regions-global built-in with a seed of the test's own.
func regionsBase(t *testing.T) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Builtin(DefaultRegionsScenario)
	if err != nil {
		t.Fatal(err)
	}
	s.Seed = 42
	return s
}

func TestRegionsPlanRunsEachDesignOnOneTrace(t *testing.T) {
	base := regionsBase(t)
	periods := []time.Duration{250 * time.Millisecond, 2 * time.Second}
	plans, err := RegionsPlan(base, periods, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, design string
		period       time.Duration
	}{
		{"global", "global", 0},
		{"split", "split", 0},
		{"rebalance-T250ms", "rebalance", 250 * time.Millisecond},
		{"rebalance-T2s", "rebalance", 2 * time.Second},
	}
	if len(plans) != len(want) {
		t.Fatalf("%d plans, want %d: %+v", len(plans), len(want), plans)
	}
	for i, w := range want {
		p := plans[i]
		if p.Name != w.name || p.Run.Design != w.design || p.Spec.Regions.Design != w.design || p.Run.PeriodS != w.period.Seconds() {
			t.Errorf("plan %d: %s design %s (run %s) T %gs; want %s design %s T %v", i, p.Name, p.Spec.Regions.Design, p.Run.Design, p.Run.PeriodS, w.name, w.design, w.period)
		}
		if p.Spec.Name != "regions-"+w.design {
			t.Errorf("plan %s: scenario name %q, want regions-%s", p.Name, p.Spec.Name, w.design)
		}
		if time.Duration(p.Spec.Regions.Period) != w.period {
			t.Errorf("plan %s: regions.period %v, want %v", p.Name, time.Duration(p.Spec.Regions.Period), w.period)
		}
		if p.Spec.Seed != 42 || p.Spec.Load.Rate != base.Load.Rate || time.Duration(p.Spec.Duration) != 3*time.Second {
			t.Errorf("plan %s: seed %d rate %g duration %v; want the base's seed 42 and rate %g, duration 3s", p.Name, p.Spec.Seed, p.Spec.Load.Rate, time.Duration(p.Spec.Duration), base.Load.Rate)
		}
		if p.Run.Err != "" {
			t.Errorf("plan %s: %s", p.Name, p.Run.Err)
		}
	}
	if base.Regions.Design != scenarios.DesignGlobal || base.Regions.Period != 0 || time.Duration(base.Duration) != 15*time.Second {
		t.Errorf("the base changed: design %s, period %v, duration %v", base.Regions.Design, time.Duration(base.Regions.Period), time.Duration(base.Duration))
	}
	plans[2].Spec.Regions.List[0].Name = "changed"
	if base.Regions.List[0].Name != "us" {
		t.Error("a plan's regions list shares the base's: editing one edits the other")
	}
}

// Without a duration, the runs last twice the longest period when the scenario is shorter: a
// period longer than the run would never rebalance. A duration given shorter than a period is
// that row's error, from the spec's validation.
func TestRegionsPlanDurationCoversThePeriods(t *testing.T) {
	base := regionsBase(t)
	plans, err := RegionsPlan(base, []time.Duration{time.Second, 16 * time.Second}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if time.Duration(p.Spec.Duration) != 32*time.Second || p.Run.Err != "" {
			t.Errorf("plan %s: duration %v, err %q; want 32s for every design, no error", p.Name, time.Duration(p.Spec.Duration), p.Run.Err)
		}
	}
	plans, err = RegionsPlan(base, []time.Duration{16 * time.Second}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if last := plans[len(plans)-1]; !strings.Contains(last.Run.Err, "regions.period") || plans[0].Run.Err != "" {
		t.Errorf("T 16s in 5s runs: errors %q, %q; want the rebalance row refused, naming regions.period, the others not", plans[0].Run.Err, last.Run.Err)
	}
}

func TestRegionsPlanRefusals(t *testing.T) {
	base := regionsBase(t)
	noRegions := *base
	noRegions.Regions = nil
	bad := *base
	bad.Load.Rate = -1
	for _, c := range []struct {
		name     string
		spec     *scenarios.Spec
		periods  []time.Duration
		duration time.Duration
		want     string
	}{
		{"no regions", &noRegions, nil, 0, "regions: absent"},
		{"zero period", base, []time.Duration{0}, 0, "--periods"},
		{"short duration", base, nil, 500 * time.Millisecond, "--duration 500ms"},
	} {
		if _, err := RegionsPlan(c.spec, c.periods, c.duration); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", c.name, err, c.want)
		}
	}
	// A spec the validation refuses is a row saying so, not a sweep that stops.
	plans, err := RegionsPlan(&bad, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 2+len(DefaultPeriods) {
		t.Fatalf("%d plans, want %d", len(plans), 2+len(DefaultPeriods))
	}
	for _, p := range plans {
		if !strings.Contains(p.Run.Err, "load.rate") {
			t.Errorf("plan %s: Err %q, want the validation's load.rate", p.Name, p.Run.Err)
		}
	}
}

func TestDesignName(t *testing.T) {
	for _, c := range [][3]string{{"regions-global", "split", "regions-split"}, {"regions-rebalance", "global", "regions-global"}, {"mine", "split", "mine-split"}} {
		if got := designName(c[0], c[1]); got != c[2] {
			t.Errorf("designName(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

func TestParsePeriods(t *testing.T) {
	got, err := ParsePeriods("250ms, 1s,4s,16s")
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{250 * time.Millisecond, time.Second, 4 * time.Second, 16 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("period %d: %v, want %v", i, got[i], want[i])
		}
	}
	for in, msg := range map[string]string{"1": "no unit", "1s,x": `"x" is not a duration`, "0s": "must be > 0", "": "no period", "-1s": "must be > 0"} {
		if _, err := ParsePeriods(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParsePeriods(%q): %v, want %q", in, err, msg)
		}
	}
}
