package bench

import (
	"math"
	"strings"
	"testing"
)

func TestSpreadOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		have []float64
		want Spread
		text string
	}{
		{nil, Spread{}, "0.00"},
		{[]float64{0.91}, Spread{0.91, 0.91, 0.91}, "0.91"},
		{[]float64{0.95, 0.80, 0.90}, Spread{0.90, 0.80, 0.95}, "0.90 (0.80–0.95)"},
		// An even count: the mean of the middle two.
		{[]float64{4, 1, 3, 2}, Spread{2.5, 1, 4}, "2.50 (1.00–4.00)"},
		// The same value every time renders as one number.
		{[]float64{7, 7}, Spread{7, 7, 7}, "7.00"},
		// A figure that was not measurable in most repetitions: the median is +Inf, not NaN.
		{[]float64{math.Inf(1), 2, math.Inf(1)}, Spread{math.Inf(1), 2, math.Inf(1)}, "+Inf (2.00–+Inf)"},
	} {
		got := spreadOf(tc.have)
		if got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.have, got, tc.want)
		}
		if s := got.format(len(tc.have), verb("%.2f")); s != tc.text {
			t.Errorf("spreadOf(%v).format = %q, want %q", tc.have, s, tc.text)
		}
	}
}

// TestJudge: each target counts the repetitions that met it, and a target met in none, or by
// one repetition of one, says so.
func TestJudge(t *testing.T) {
	t.Parallel()
	good := Repetition{
		Generator: Generator{OfferedRPS: 2_000_000, DecisionsPerSec: 1_999_979},
		Ratio:     Ratio{Value: 0.93},
		Lease:     Lease{Achieved: 0.995, P99Ms: 0.4},
		Gateway:   Gateway{MemoryRatio: 0.85, RedisRatio: 0.61},
	}
	bad := Repetition{
		Generator: Generator{OfferedRPS: 2_000_000, DecisionsPerSec: 1_999_999, Dropped: 1},
		Memory:    Memory{AllocsPerDecision: 0.01},
		Ratio:     Ratio{Value: 0.89},
		Lease:     Lease{Achieved: 0.999, P99Ms: 1},
		Gateway:   Gateway{MemoryRatio: 0.79, RedisRatio: 0.59},
	}
	gs := goalsMet([]Repetition{good, bad, good})
	if len(gs) != len(goals) {
		t.Fatalf("judge: %d goals, want %d", len(gs), len(goals))
	}
	for _, g := range gs {
		if g.Met != 2 || g.Of != 3 || g.Verdict() != "met in 2 of 3" {
			t.Errorf("%s: met %d of %d (%q), want 2 of 3", g.Row, g.Met, g.Of, g.Verdict())
		}
	}
	for _, tc := range []struct {
		runs []Repetition
		want string
	}{{[]Repetition{good}, "met"}, {[]Repetition{bad}, "not met"}, {[]Repetition{bad, bad}, "met in 0 of 2"}} {
		for _, g := range goalsMet(tc.runs) {
			if g.Verdict() != tc.want {
				t.Errorf("%s over %d runs: %q, want %q", g.Row, len(tc.runs), g.Verdict(), tc.want)
			}
		}
	}
}

// TestMarkdownStatesTargets: every row with a target says whether it was met, and repeated
// figures show their median and range.
func TestMarkdownStatesTargets(t *testing.T) {
	t.Parallel()
	run := func(ratio, mem float64) Repetition {
		return Repetition{
			Central: []Central{{Mode: modeCoalescing, DecisionsPerSec: 100 * ratio}},
			Ceiling: Ceiling{RequestsPerSec: 100},
			Ratio:   Ratio{Best: modeCoalescing, Value: ratio},
			Lease:   Lease{Achieved: 1, P99Ms: 0.5},
			Gateway: Gateway{Variants: []GatewayVariant{{Name: GatewayBare, RequestsPerSec: 100}, {Name: GatewayMemory, RequestsPerSec: mem}, {Name: GatewayRedis, RequestsPerSec: 30}},
				MemoryRatio: mem / 100, RedisRatio: 0.3},
		}
	}
	runs := []Repetition{run(0.95, 90), run(0.85, 70), run(0.92, 85)}
	md := Markdown(&Report{Repetitions: runs, Goals: goalsMet(runs)})
	rows := 0
	for _, line := range strings.Split(md, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 8 || strings.TrimSpace(cells[7]) == "" || strings.HasPrefix(line, "| section") || strings.HasPrefix(line, "| ---") {
			continue
		}
		rows++
		if !strings.Contains(cells[7], " of 3**") {
			t.Errorf("target cell without a verdict: %s", line)
		}
	}
	if rows != len(goals) {
		t.Errorf("%d rows with a target, want %d:\n%s", rows, len(goals), md)
	}
	for _, want := range []string{
		">= 0.8x bare: **met in 2 of 3**", ">= 0.6x bare: **met in 0 of 3**", "best central / ceiling >= 0.9: **met in 2 of 3**",
		"**0.92 (0.85–0.95)**", "0.85 (0.70–0.90) x bare", "85 (70–90)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("README.md lacks %q:\n%s", want, md)
		}
	}
}

func TestParseWrk(t *testing.T) {
	t.Parallel()
	out := "Running 1s test @ http://127.0.0.1:1/\n" + wrkMarker +
		`{"requests":1489,"duration_us":1099494,"connect":0,"read":1,"write":0,"status":3,"timeout":2,"p50_us":3573,"p99_us":16774}` + "\n"
	r, err := parseWrk([]byte(out))
	if err != nil || r.Requests != 1489 || r.DurationUs != 1099494 || r.Status != 3 || r.P99Us != 16774 {
		t.Fatalf("parseWrk = %+v, %v", r, err)
	}
	var v GatewayVariant
	v.add(r)
	v.add(wrkResult{Requests: 511, DurationUs: 900506, P50Us: 1427, P99Us: 9000})
	if v.Requests != 2000 || v.RequestsPerSec != 1000 || v.P50Ms != 2.5 || v.P99Ms != 16.774 || v.Non2xx != 3 || v.SocketErrors != 3 {
		t.Errorf("two halves: %+v; want 2000 requests at 1000/s, p50 2.5 ms (mean), p99 16.774 ms (worse)", v)
	}
	if err := v.check(); err != nil {
		t.Errorf("6 failures in 2000: %v", err)
	}
	v.Non2xx = 100
	if err := v.check(); err == nil || !strings.Contains(err.Error(), "103 of 2000") {
		t.Errorf("103 failures in 2000: %v, want an error", err)
	}
	for name, in := range map[string]string{
		"no line":     "Running 1s test\n",
		"bad json":    wrkMarker + "{requests\n",
		"no duration": wrkMarker + `{"requests":1}` + "\n",
	} {
		if _, err := parseWrk([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
