package simulate

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"ratelab/scenarios"
)

func TestJudgeCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		model, baseline float64
		missing         string
		want            bool
		why             string
	}{
		{"within and nearer", 0.10, 0.30, "", true, "validated: model off by 10.0%"},
		{"within but the baseline is nearer", 0.10, 0.05, "", false, "baseline is as near or nearer"},
		{"within and tied with the baseline", 0.10, 0.10, "", false, "baseline is as near or nearer"},
		{"nearer but beyond the tolerance", 0.40, 0.90, "", false, "beyond the tolerance 25.0%"},
		{"beyond and the baseline nearer", 0.40, 0.20, "", false, "beyond the tolerance 25.0%, and the baseline"},
		{"no measurement", 0, 1, "no step met the SLO", false, "no measurement (no step met the SLO)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			have := judgeCheck(Check{Metric: MetricRelative, Tolerance: P99Tolerance, ModelError: tc.model, BaselineError: tc.baseline, Missing: tc.missing})
			if have.Validated != tc.want || !strings.Contains(have.Why, tc.why) {
				t.Errorf("validated %v (%s), want %v with %q", have.Validated, have.Why, tc.want, tc.why)
			}
		})
	}
}

// heldOut is a measurement of 3 primaries whose figures the tests below judge.
func heldOut() (HeldOut, Estimates, Estimates) {
	m := HeldOut{
		Knee1RPS: 10_000, KneeNRPS: 11_000, SaturationRPS: 11_000,
		Levels:    []LevelRuns{{Level: 0.4, Rate: 4400, MedianP99Ms: 2}, {Level: 0.6, Rate: 6600, MedianP99Ms: 3}, {Level: 0.8, Rate: 8800, MedianP99Ms: 6}},
		Shares:    []ShareRun{{Theta: 0.99, Calls: []int64{450, 300, 250}, Shares: []float64{0.45, 0.30, 0.25}}},
		BusyShare: []float64{0.4, 0.3, 0.2},
	}
	cr := CalibrationRuns{ProbeAnsweredRPS: 12_000, LowRPS: 3000, LowP99Ms: 1.5, HighRPS: 4200, HighP99Ms: 1.8}
	base := baselines(&scenarios.Spec{Tenants: scenarios.Tenants{Count: 1000}}, 3, cr, m)
	// The model and the baseline both name the measured busiest primary.
	m.Busiest = base.Busiest
	model := Estimates{Knee1RPS: 9_500, KneeNRPS: 12_000, P99Ms: []float64{2.2, 3.3, 5.0},
		Shares: [][]float64{{0.44, 0.31, 0.25}}, Busiest: base.Busiest}
	return m, model, base
}

func TestBaselines(t *testing.T) {
	t.Parallel()
	m, _, base := heldOut()
	if base.Knee1RPS != 12_000 || base.KneeNRPS != 36_000 {
		t.Errorf("knees %v and %v, want the probe's 12000 and 3 x it, 36000", base.Knee1RPS, base.KneeNRPS)
	}
	// The line through (3000, 1.5) and (4200, 1.8) rises 0.25 ms per 1000/s.
	for i, want := range []float64{1.85, 2.40, 2.95} {
		if have := base.P99Ms[i]; math.Abs(have-want) > 1e-9 {
			t.Errorf("p99 at %v/s: have %v, want %v", m.Levels[i].Rate, have, want)
		}
	}
	if have := base.Shares[0]; len(have) != 3 || have[0] != 1.0/3 {
		t.Errorf("shares %v, want 1/3 each", have)
	}
	if have, want := linearP99(3000, 1.8, 4200, 1.5, 9000), 1.5; have != want {
		t.Errorf("a falling line is floored at the lower p99: have %v, want %v", have, want)
	}
}

func TestJudgeHoldout(t *testing.T) {
	t.Parallel()
	m, model, base := heldOut()
	checks := judgeHoldout(3, m, model, base)
	want := map[string]bool{
		"node share, Zipf 0.99 (3 primaries)":            true,  // 1 point off, the equal split 11.7
		"p99 at 40% of saturation, 4400/s (3 primaries)": false, // 10% off, but the line (1.85 ms) is 7.5% off
		"p99 at 60% of saturation, 6600/s (3 primaries)": true,  // 10% off, the line 20%
		"p99 at 80% of saturation, 8800/s (3 primaries)": true,  // 16.7% off, the line 50.8%
		"knee, 1 primary":   true, // 5% off, the probe 20%
		"knee, 3 primaries": true, // 9.1% off, proportional 227%
		"busiest primary's main thread (3 primaries)": false, // right, but so is the baseline
	}
	if len(checks) != len(want) {
		t.Fatalf("%d checks, want %d", len(checks), len(want))
	}
	for _, c := range checks {
		w, ok := want[c.Quantity]
		if !ok {
			t.Errorf("unexpected check %q", c.Quantity)
			continue
		}
		if c.Validated != w {
			t.Errorf("%s: validated %v, want %v (%s)", c.Quantity, c.Validated, w, c.Why)
		}
	}
	if _, err := json.Marshal(checks); err != nil {
		t.Errorf("the checks do not encode as JSON: %v", err)
	}
}

func TestJudgeHoldoutFailsAModelBeyondTolerance(t *testing.T) {
	t.Parallel()
	m, model, base := heldOut()
	model.KneeNRPS = 15_000 // 36% above the measured 11,000, though far nearer than 3 x the probe
	model.Shares[0] = []float64{0.42, 0.33, 0.25}
	m.Knee1RPS = 0 // no step met the SLO
	for _, c := range judgeHoldout(3, m, model, base) {
		switch c.Quantity {
		case "knee, 3 primaries", "node share, Zipf 0.99 (3 primaries)", "knee, 1 primary":
			if c.Validated {
				t.Errorf("%s validated: %s", c.Quantity, c.Why)
			}
		}
	}
}

func TestKneeSearch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		knee  float64
		want  float64
		ratio float64
	}{
		{"inside", 7300, 7300, 1.01},
		{"above the range", 1e9, 50_000, 1},
		{"below the range", 10, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			have, err := kneeSearch(1000, 50_000, 12, func(r float64) (bool, error) { calls++; return r <= tc.knee, nil })
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 && have != 0 || tc.want > 0 && (have > tc.want || have < tc.want/tc.ratio) {
				t.Errorf("knee %v, want %v (within a factor %v below)", have, tc.want, tc.ratio)
			}
			if calls > 14 {
				t.Errorf("%d model runs, want at most 14", calls)
			}
		})
	}
}

func TestModelSharesAndMostTenants(t *testing.T) {
	t.Parallel()
	for _, theta := range []float64{0.99, 1.2} {
		s, err := modelShares(1000, theta, 3)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, v := range s {
			sum += v
		}
		if math.Abs(sum-1) > 1e-9 || pointsError(s, equalShares(3)) < 2 {
			t.Errorf("Zipf %v: shares %v: want a sum of 1 and Zipf's skew (more than 2 points off an equal split)", theta, s)
		}
	}
	if n := mostTenantsNode(1000, 3); n < 0 || n > 2 {
		t.Errorf("most tenants on primary %d of 3", n)
	}
	if n := mostTenantsNode(1, 3); n != argmax(mustShares(t, 1, 3)) {
		t.Errorf("one tenant: most tenants on %d, its primary %d", n, argmax(mustShares(t, 1, 3)))
	}
}

func mustShares(t *testing.T, tenants, n int) []float64 {
	s, err := modelShares(tenants, 0.99, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHoldoutOptionsValidate(t *testing.T) {
	t.Parallel()
	o := HoldoutOptions{Primaries: 1, Repeats: -1, RunLength: 1500 * 1e6}.withDefaults()
	err := o.Validate()
	for _, want := range []string{"--primaries 1", "--repeats -1", "--run-length 1.5s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v: want it to name %q", err, want)
		}
	}
	if err := (HoldoutOptions{}).withDefaults().Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

func TestJudgeExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model, baseline float64
		want            bool
		why             string
	}{
		{0, 1, true, "validated: the model names the measured primary, the baseline does not"},
		{0, 0, false, "but so does the baseline"},
		{1, 1, false, "the model names another primary (so does"},
		{1, 0, false, "the baseline names the measured one"},
	} {
		have := judgeCheck(Check{Metric: MetricExact, ModelError: tc.model, BaselineError: tc.baseline})
		if have.Validated != tc.want || !strings.Contains(have.Why, tc.why) {
			t.Errorf("model error %v, baseline error %v: validated %v (%s), want %v with %q", tc.model, tc.baseline, have.Validated, have.Why, tc.want, tc.why)
		}
	}
}
