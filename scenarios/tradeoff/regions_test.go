package tradeoff

import (
	"strings"
	"testing"
	"time"

	"ratelab/scenarios"
)

// regionsBase is a multi-region spec as a built-in holds one: three regions, the global design.
func regionsBase(t *testing.T) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Builtin("smoke")
	if err != nil {
		t.Fatal(err)
	}
	s.Name = "regions-test"
	s.Seed = 7
	s.Regions = &scenarios.RegionsCfg{
		Design: scenarios.DesignGlobal,
		List:   []scenarios.RegionCfg{{Name: "eu"}, {Name: "us"}, {Name: "ap"}},
		RTT:    scenarios.Duration(60 * time.Millisecond),
		Period: scenarios.Duration(time.Second),
	}
	return s
}

func TestRegionsPlanRunsEachDesignOnOneTrace(t *testing.T) {
	base := regionsBase(t)
	periods := []time.Duration{250 * time.Millisecond, 4 * time.Second}
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
		{"rebalance-T4s", "rebalance", 4 * time.Second},
	}
	if len(plans) != len(want) {
		t.Fatalf("%d plans, want %d: %+v", len(plans), len(want), plans)
	}
	for i, w := range want {
		p := plans[i]
		if p.Name != w.name || p.Run.Design != w.design || p.Spec.Regions.Design != w.design || p.Run.PeriodS != w.period.Seconds() {
			t.Errorf("plan %d: %s design %s (run %s) T %gs; want %s design %s T %v", i, p.Name, p.Spec.Regions.Design, p.Run.Design, p.Run.PeriodS, w.name, w.design, w.period)
		}
		if w.period > 0 && time.Duration(p.Spec.Regions.Period) != w.period {
			t.Errorf("plan %s: regions.period %v, want %v", p.Name, time.Duration(p.Spec.Regions.Period), w.period)
		}
		if p.Spec.Seed != 7 || p.Spec.Load.Rate != base.Load.Rate || time.Duration(p.Spec.Duration) != 3*time.Second {
			t.Errorf("plan %s: seed %d rate %g duration %v; want the base's seed 7 and rate %g, duration 3s", p.Name, p.Spec.Seed, p.Spec.Load.Rate, time.Duration(p.Spec.Duration), base.Load.Rate)
		}
		if p.Run.Err != "" {
			t.Errorf("plan %s: %s", p.Name, p.Run.Err)
		}
	}
	if base.Regions.Design != scenarios.DesignGlobal || time.Duration(base.Regions.Period) != time.Second || time.Duration(base.Duration) != 5*time.Second {
		t.Errorf("the base changed: design %s, period %v, duration %v", base.Regions.Design, time.Duration(base.Regions.Period), time.Duration(base.Duration))
	}
	plans[2].Spec.Regions.List[0].Name = "changed"
	if base.Regions.List[0].Name != "eu" {
		t.Error("a plan's regions list shares the base's: editing one edits the other")
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
