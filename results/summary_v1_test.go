package results

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// v1Fixture is a summary.json written by the v1 writer (every field set).
var v1Fixture = filepath.Join("testdata", "summary.v1.json")

// A v1 file reads into the v2 struct by v1's definitions, and keeps saying it is v1.
func TestReadSummaryV1(t *testing.T) {
	t.Parallel()
	s, err := ReadSummary(v1Fixture)
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != SchemaSummaryV1 || !s.V1() {
		t.Errorf("schema %q, V1() %v; want %q kept so readers can tell", s.Schema, s.V1(), SchemaSummaryV1)
	}
	served := ServedLatency{P50: 0.412, P90: 0.9, P99: 2.5, P999: 12.75, Max: 2301.5}
	if s.LatencyServedMs != served {
		t.Errorf("latency_served_ms %+v; want v1's latency_ms %+v (it was over answered requests)", s.LatencyServedMs, served)
	}
	// v1 counted no drops: the same values, every one measurable, no measurable_pct or dropped.
	if want := (Latency{P50: 0.412, P90: 0.9, P99: 2.5, P999: 12.75, Max: 2301.5}); s.LatencyMs != want {
		t.Errorf("latency_ms %+v; want %+v", s.LatencyMs, want)
	}
	b := s.Overspend.Bound
	if b.Tokens != 1500.5 || !reflect.DeepEqual(b.Sources, map[string]float64{BoundV1: 1500.5}) || b.Within != nil {
		t.Errorf("bound %+v (within %v); want 1500.5 tokens, parts {v1: 1500.5}, within nil", b, b.Within)
	}
	if s.Overspend.Requests != 1200 || s.Overspend.Ratio != Ratio(1200, 900000) || s.Central.Ops != 1119000 ||
		s.Load.Dropped != 90700 || s.Outcomes.Errors != 280 || len(s.Faults) != 1 || len(s.SLO.Checks) != 2 {
		t.Errorf("v1 fields lost: %+v", s)
	}
	// Missing v2 fields stay zero.
	if s.Load.Offered != 0 || s.Load.Late != 0 || s.Overspend.PossibleRequests != 0 ||
		s.Overspend.BurstExcess != (BurstExcess{}) || s.Central.OtherOps != 0 || s.LatencyClamped != 0 {
		t.Errorf("v2-only fields set from a v1 file: load %+v overspend %+v central %+v", s.Load, s.Overspend, s.Central)
	}
}

// A v1 summary read and rewritten stays v1: WriteSummary writes it back in the v1 layout, byte
// for byte what the v1 writer wrote, and it reads back to the same struct.
func TestV1RewriteStaysV1(t *testing.T) {
	t.Parallel()
	s, err := ReadSummary(v1Fixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), SummaryFile)
	if err := WriteSummary(path, s); err != nil {
		t.Fatal(err)
	}
	have, _ := os.ReadFile(path)
	want, _ := os.ReadFile(v1Fixture)
	if !bytes.Equal(have, want) {
		t.Errorf("rewritten v1 summary differs from the v1 file it was read from:\nhave:\n%s\nwant:\n%s", have, want)
	}
	back, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("v1 round trip\nhave %+v\nwant %+v", back, s)
	}
	// A new summary is v2 whatever its Schema field held before.
	n := NewSummary("x", 1, s.StartedAt)
	n.Schema = "ratelab.summary/v0"
	if err := WriteSummary(path, n); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadSummary(path); err != nil || back.Schema != SchemaSummary {
		t.Errorf("a new summary reads back as %v, %v; want %q", back, err, SchemaSummary)
	}
}

// v1's bound_tokens of 0 meant "no bound applies": no part.
func TestReadSummaryV1NoBound(t *testing.T) {
	t.Parallel()
	raw, _ := os.ReadFile(v1Fixture)
	raw = bytes.Replace(raw, []byte(`"bound_tokens": 1500.5`), []byte(`"bound_tokens": 0`), 1)
	path := filepath.Join(t.TempDir(), SummaryFile)
	os.WriteFile(path, raw, 0o644)
	s, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Overspend.Bound; b.Tokens != 0 || len(b.Sources) != 0 || b.Within != nil {
		t.Errorf("bound %+v; want none", b)
	}
}

func TestLatencyOf(t *testing.T) {
	t.Parallel()
	h := NewHistogram() // 1..1000 ms
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	h99 := NewHistogram() // 1..99 ms
	for i := 1; i <= 99; i++ {
		h99.Record(time.Duration(i) * time.Millisecond)
	}
	inf := Unmeasurable
	tests := []struct {
		name    string
		h       *Histogram
		dropped int64
		want    [5]Ms // p50, p90, p99, p999, max
		pct     float64
	}{
		{"no drops: the answered percentiles", h, 0, [5]Ms{h50(h, 50), h50(h, 90), h50(h, 99), h50(h, 99.9), Ms(h.MaxMs())}, 100},
		// 1000 answered of 1001: p99.9's rank 999.999 is within the answered; max is a drop.
		{"one drop", h, 1, [5]Ms{h50(h, 50.05), h50(h, 90.09), h50(h, 99.099), h50(h, 99.9999), inf}, 100 * 1000.0 / 1001},
		// 99 of 100: p99 lands exactly on the last answered request (ranks 50, 90, 99 of 99).
		{"p99 on the edge", h99, 1, [5]Ms{h50(h99, 100*50/99.0), h50(h99, 100*90/99.0), Ms(h99.MaxMs()), inf, inf}, 99},
		{"a third dropped", h, 500, [5]Ms{h50(h, 75), inf, inf, inf, inf}, 100 * 1000.0 / 1500},
		{"everything dropped", NewHistogram(), 5, [5]Ms{inf, inf, inf, inf, inf}, 0},
		{"nothing offered", NewHistogram(), 0, [5]Ms{inf, inf, inf, inf, inf}, 0},
		{"negative drops read as none", h, -3, [5]Ms{h50(h, 50), h50(h, 90), h50(h, 99), h50(h, 99.9), Ms(h.MaxMs())}, 100},
	}
	for _, tt := range tests {
		l, s := LatencyOf(tt.h, tt.dropped)
		have := [5]Ms{l.P50, l.P90, l.P99, l.P999, l.Max}
		if have != tt.want || math.Abs(l.MeasurablePct-tt.pct) > 1e-9 || l.Undecided != max(tt.dropped, 0) {
			t.Errorf("%s: %v, measurable %v%%, dropped %d; want %v, %v%%, %d", tt.name, have, l.MeasurablePct, l.Undecided, tt.want, tt.pct, max(tt.dropped, 0))
		}
		if tt.h.Count() > 0 && (s.P99 != tt.h.QuantileMs(99) || s.Max != tt.h.MaxMs()) {
			t.Errorf("%s: served %+v; want the histogram's own percentiles", tt.name, s)
		}
	}
}

func h50(h *Histogram, q float64) Ms { return Ms(h.QuantileMs(q)) }

func TestMsJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		m    Ms
		json string
		text string
	}{{1.25, "1.25", "1.250"}, {0, "0", "0.000"}, {Unmeasurable, "null", "not measurable"}} {
		b, err := json.Marshal(tt.m)
		if err != nil || string(b) != tt.json || tt.m.String() != tt.text {
			t.Errorf("Ms(%v): %s, %v, %q; want %s, %q", float64(tt.m), b, err, tt.m.String(), tt.json, tt.text)
		}
		var back Ms
		if err := json.Unmarshal(b, &back); err != nil || back != tt.m {
			t.Errorf("Ms %s read back as %v, %v", b, back, err)
		}
	}
	for _, bad := range []Ms{Ms(math.NaN()), Ms(math.Inf(-1))} {
		if _, err := json.Marshal(bad); err == nil {
			t.Errorf("Ms(%v) marshalled; want an error", float64(bad))
		}
	}
	if Unmeasurable.Measurable() || !Ms(3).Measurable() {
		t.Errorf("Measurable is wrong")
	}
}

// A check whose value is not measurable is written with value null and read back as +Inf; the
// "<=" in its name stays readable.
func TestCheckNotMeasurable(t *testing.T) {
	t.Parallel()
	c := Check{Name: "p99_ms <=", Limit: 5, Value: math.Inf(1), Pass: false}
	var buf bytes.Buffer
	err := encodeJSON(&buf, c, "")
	b := bytes.TrimSpace(buf.Bytes())
	if err != nil || string(b) != `{"name":"p99_ms <=","limit":5,"value":null,"pass":false}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var back Check
	if err := json.Unmarshal(b, &back); err != nil || !math.IsInf(back.Value, 1) || back.Name != c.Name {
		t.Errorf("read back %+v, %v", back, err)
	}
}

func TestJudgeBound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		parts  map[string]float64
		worst  float64
		tokens float64
		within string // "true", "false", "nil"
		// unmeasured lists a source not measured.
		unmeasured bool
	}{
		{"no bound", nil, 5, 0, "nil", false},
		{"within", map[string]float64{BoundLeases: 8, BoundReplicationGap: 2}, 10, 10, "true", false},
		{"beyond", map[string]float64{BoundLeases: 8}, 8.5, 8, "false", false},
		{"a promise of nothing", map[string]float64{BoundLeases: 0}, 0, 0, "true", false},
		{"rounding", map[string]float64{BoundLeases: 0.1, BoundReplicationGap: 0.2}, 0.30000000000000004, 0.30000000000000004, "true", false},
		// A source not measured adds an unknown amount: within what was measured holds,
		// beyond it cannot be judged.
		{"unmeasured, within the rest", map[string]float64{BoundLeases: 8}, 7, 8, "true", true},
		{"unmeasured, beyond the rest", map[string]float64{BoundLeases: 8}, 9, 8, "nil", true},
		{"unmeasured only", nil, 3, 0, "nil", true},
	}
	for _, tt := range tests {
		o := Overspend{BurstExcess: BurstExcess{WorstTokens: tt.worst}, Bound: Bound{Tokens: 99, Sources: tt.parts}}
		if tt.unmeasured {
			o.Bound.Unmeasured = []Unmeasured{{Source: BoundReplicationGap, Reason: "test"}}
		}
		o.JudgeBound()
		within := "nil"
		if o.Bound.Within != nil {
			within = strconv.FormatBool(*o.Bound.Within)
		}
		if o.Bound.Tokens != tt.tokens || within != tt.within {
			t.Errorf("%s: tokens %v within %s; want %v, %s", tt.name, o.Bound.Tokens, within, tt.tokens, tt.within)
		}
	}
}
