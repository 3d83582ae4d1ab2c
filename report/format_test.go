package report

import (
	"math"
	"slices"
	"testing"
	"time"

	"ratelab/results"
)

func TestFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have string
		want string
	}{
		{"int 0", fmtInt(0), "0"},
		{"int 999", fmtInt(999), "999"},
		{"int 1000", fmtInt(1000), "1,000"},
		{"int 1119280", fmtInt(1119280), "1,119,280"},
		{"int negative", fmtInt(-1234567), "-1,234,567"},
		{"int min", fmtInt(math.MinInt64), "-9,223,372,036,854,775,808"},
		{"rate", fmtRate(18500.54), "18,500.5"},
		{"rate small", fmtRate(0.04), "0.0"},
		{"rate negative fraction", fmtRate(-0.5), "-0.5"},
		{"ms", fmtMs(2301.5), "2,301.500"},
		{"ms tiny", fmtMs(0.0004), "0.000"},
		{"pct", fmtPct(0.0013333), "0.1333%"},
		{"tokens residue", fmtTokens(7.105427357601002e-15), "0"},
		{"tokens fraction", fmtTokens(6.16208995927233), "6.162"},
		{"tokens whole", fmtTokens(1611), "1,611"},
		{"share", fmtShare(0.31), "31.00%"},
		{"float whole", fmtFloat(1500), "1,500"},
		{"float fraction", fmtFloat(0.00133), "0.00133"},
		{"float huge", fmtFloat(1e20), "1e+20"},
		{"seconds", fmtSeconds(60.5), "60.5 s"},
		{"seconds whole", fmtSeconds(10), "10 s"},
		{"seconds zero", fmtSeconds(0), "0 s"},
		{"seconds noise", fmtSeconds(0.1 + 0.2), "0.3 s"},
		{"sec", fmtSec(9.1), "9.1"},
		{"sec whole", fmtSec(10), "10"},
		{"sec tiny negative", fmtSec(-0.0001), "0"},
		{"sec or dash zero", fmtSecOrDash(0), "—"},
		{"sec or dash", fmtSecOrDash(10.4), "10.4"},
		{"time", fmtTime(time.Date(2025, 6, 1, 14, 0, 0, 0, time.FixedZone("CEST", 2*3600))), "2025-06-01 12:00:00 UTC"},
		{"time zero", fmtTime(time.Time{}), "unknown"},
		{"md", mdEscape("a|b *c* _d_ `e` [f] <g>\nh"), `a\|b \*c\* \_d\_ 'e' \[f\] &lt;g&gt; h`},
		{"md code", mdCode("rl:{t1}:a|b `x`\n"), `rl:{t1}:a\|b 'x' `},
		{"latency", fmtLatency(2301.5), "2,301.500"},
		{"latency not measurable", fmtLatency(results.Unmeasurable), "not measurable"},
		{"float not measurable", fmtFloat(math.Inf(1)), "not measurable"},
		{"percentile", fmtPercentile(96.04), "p96.04"},
		{"percentile whole", fmtPercentile(98), "p98"},
		{"percentile rounds down", fmtPercentile(98.996), "p98.99"},
		{"percentile half", fmtPercentile(99.5), "p99.5"},
		{"within none", fmtWithin(nil), "none"},
		{"within yes", fmtWithin(&[]bool{true}[0]), "yes"},
		{"within no", fmtWithin(&[]bool{false}[0]), "no"},
		{"bound sources", boundSources(map[string]float64{"replication_gap": 500.5, "leases": 1000}), "leases 1,000 + replication gap 500.5"},
		{"bound sources none", boundSources(nil), ""},
	}
	for _, tt := range tests {
		if tt.have != tt.want {
			t.Errorf("%s: have %q, want %q", tt.name, tt.have, tt.want)
		}
	}
}

func TestDecades(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lo, hi         float64
		wantLo, wantHi float64
	}{
		{0.2, 0.8, 0.1, 1},
		{0.412, 41.7, 0.1, 100},
		{1, 1, 1, 10},
		{3, 3, 1, 10},
		{0.001, 250000, 0.001, 1e6},
	}
	for _, tt := range tests {
		lo, hi := decades(tt.lo, tt.hi)
		if math.Abs(lo-tt.wantLo) > tt.wantLo*1e-9 || math.Abs(hi-tt.wantHi) > tt.wantHi*1e-9 {
			t.Errorf("decades(%v, %v) = %v, %v; want %v, %v", tt.lo, tt.hi, lo, hi, tt.wantLo, tt.wantHi)
		}
		if lo > tt.lo || hi < tt.hi {
			t.Errorf("decades(%v, %v) = [%v, %v] does not hold the input", tt.lo, tt.hi, lo, hi)
		}
	}
}

func TestPercentileTicks(t *testing.T) {
	t.Parallel()
	ticks := percentileTicks(1e4)
	want := []string{"0%", "90%", "99%", "99.9%", "99.99%"}
	if len(ticks) != len(want) {
		t.Fatalf("%d ticks, want %d: %+v", len(ticks), len(want), ticks)
	}
	for i, tk := range ticks {
		if tk.Label != want[i] {
			t.Errorf("tick %d = %q at %v, want %q", i, tk.Label, tk.Value, want[i])
		}
	}
}

func TestDecadeTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		min, max float64
		want     []string // the labels, in order
		wantN    int      // all ticks, labelled or not
	}{
		{0.1, 10, []string{"0.1", "1", "10"}, 19},
		{0.001, 1, []string{"0.001", "0.01", "0.1", "1"}, 28},
		{1, 1000, []string{"1", "10", "100", "1000"}, 28},
		{math.Inf(1), math.Inf(-1), nil, 0},
		{0, 10, nil, 0},
	}
	for _, tt := range tests {
		var labels []string
		ticks := decadeTicks{}.Ticks(tt.min, tt.max)
		for _, tk := range ticks {
			if tk.Value < tt.min*(1-1e-9) || tk.Value > tt.max*(1+1e-9) {
				t.Errorf("Ticks(%v, %v): tick %v outside the range", tt.min, tt.max, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tt.want) || len(ticks) != tt.wantN {
			t.Errorf("Ticks(%v, %v): labels %v (%d ticks), want %v (%d)", tt.min, tt.max, labels, len(ticks), tt.want, tt.wantN)
		}
	}
}
