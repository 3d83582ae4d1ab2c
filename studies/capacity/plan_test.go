package capacity

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestLeaseCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r    float64
		n    int64
		g    int
		ttl  time.Duration
		want float64
	}{
		{r: 10_000, n: 0, g: 8, ttl: time.Second, want: 10_000},        // no lease: one call per decision
		{r: 10_000, n: 100, g: 8, ttl: time.Second, want: 100},         // hot key: rate/size
		{r: 400, n: 100, g: 8, ttl: time.Second, want: 8},              // warm: one fetch per gateway per TTL
		{r: 3, n: 100, g: 8, ttl: time.Second, want: 3},                // cold: never more calls than requests
		{r: 1000, n: 10, g: 4, ttl: 100 * time.Millisecond, want: 100}, // r/n = 100 > g/ttl = 40
	}
	for _, tc := range tests {
		if have := LeaseCost(tc.r, tc.n, tc.g, tc.ttl); math.Abs(have-tc.want) > 1e-9 {
			t.Errorf("LeaseCost(%v, %d, %d, %v) = %v, want %v", tc.r, tc.n, tc.g, tc.ttl, have, tc.want)
		}
	}
}

func TestPlanMeanLoad(t *testing.T) {
	t.Parallel()
	in := PlanInput{TargetRPS: 1_000_000, Tenants: 2_000_000, Theta: 0, Headroom: 0.2, PerPrimaryRPS: 100_000, PerPrimarySource: "test"}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Central
	if c.MeanPrimaries != 13 { // ceil(1e6 / 80e3)
		t.Errorf("mean primaries %d, want ceil(1e6/80e3) = 13", c.MeanPrimaries)
	}
	if !c.Feasible || c.Primaries < c.MeanPrimaries {
		t.Fatalf("primaries %d (feasible %v), want >= %d", c.Primaries, c.Feasible, c.MeanPrimaries)
	}
	checkMinimal(t, p)
	if math.Abs(c.CentralRPS-in.TargetRPS)/in.TargetRPS > 1e-9 {
		t.Errorf("central %v, want the target %v without leases", c.CentralRPS, in.TargetRPS)
	}
}

// checkMinimal re-derives the recommendation: the busiest primary fits at Primaries and not at
// Primaries-1 (unless that is below the mean-load count).
func checkMinimal(t *testing.T, p *PlanResult) {
	t.Helper()
	pop, _ := NewPopularity(p.Input.Tenants, p.Input.Theta)
	slots := LoadBySlot(pop, p.Input.TargetRPS, func(r float64) float64 { return r })
	c := p.Central
	if _, hot := slots.Hottest(c.Primaries); hot > p.Usable {
		t.Errorf("at %d primaries the busiest carries %v > usable %v", c.Primaries, hot, p.Usable)
	}
	if c.Primaries-1 >= c.MeanPrimaries {
		if _, hot := slots.Hottest(c.Primaries - 1); hot <= p.Usable {
			t.Errorf("%d primaries already fit (busiest %v <= %v): not minimal", c.Primaries-1, hot, p.Usable)
		}
	}
}

func TestPlanHotKeyAndLeases(t *testing.T) {
	t.Parallel()
	in := PlanInput{TargetRPS: 5_000_000, Tenants: 1000, Theta: 0.99, Headroom: 0.3,
		PerPrimaryRPS: 80_000, PerPrimarySource: "test", Lease: 100}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Central.Feasible || p.Central.Limiting != "hottest key" {
		t.Errorf("central: feasible %v limiting %q; 13%% of 5M on one key cannot fit one primary", p.Central.Feasible, p.Central.Limiting)
	}
	l := p.Leased
	if l == nil || !l.Feasible {
		t.Fatalf("leases of 100: %+v, want a feasible sizing", l)
	}
	if want := p.Central.HotKeyRPS / 100; math.Abs(l.HotKeyCentralRPS-want) > 1e-6*want {
		t.Errorf("hot key central with leases %v, want rate/100 = %v", l.HotKeyCentralRPS, want)
	}
	if l.CentralRPS >= p.Central.CentralRPS/50 {
		t.Errorf("leases of 100 over 1000 hot tenants left %v central calls of %v", l.CentralRPS, p.Central.CentralRPS)
	}
	text := strings.Join(p.Steps, "\n")
	for _, want := range []string{"hottest key", "Leases of 100 tokens", "headroom"} {
		if !strings.Contains(text, want) {
			t.Errorf("reasoning lacks %q:\n%s", want, text)
		}
	}
}

func TestPlanHottestPrimary(t *testing.T) {
	t.Parallel()
	// 100K over 1M Zipf tenants: the hottest tenant is ~7% of the load, so two primaries of
	// 56K usable cannot split it evenly.
	p, err := MakePlan(PlanInput{TargetRPS: 100_000, Tenants: 1_000_000, Theta: 0.99, Headroom: 0.3, PerPrimaryRPS: 80_000, PerPrimarySource: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Central.MeanPrimaries != 2 {
		t.Errorf("mean primaries %d, want ceil(100000/56000) = 2", p.Central.MeanPrimaries)
	}
	checkMinimal(t, p)
	if p.Central.Limiting != "mean load" && p.Central.Primaries == p.Central.MeanPrimaries {
		t.Errorf("limiting %q with primaries = mean count", p.Central.Limiting)
	}
	if p.Central.Limiting == "hottest shard" && p.Central.Primaries <= p.Central.MeanPrimaries {
		t.Errorf("limiting hottest primary but primaries %d <= mean %d", p.Central.Primaries, p.Central.MeanPrimaries)
	}
}

func TestPlanValidate(t *testing.T) {
	t.Parallel()
	_, err := MakePlan(PlanInput{TargetRPS: -1, Tenants: 0, Theta: 0.99, Headroom: 1, PerPrimaryRPS: 0})
	if err == nil {
		t.Fatal("bad input accepted")
	}
	for _, want := range []string{"target-rps", "tenants", "headroom", "per-primary-rps"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
