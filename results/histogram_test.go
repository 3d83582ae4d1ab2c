package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// uniformHistogram records every whole microsecond from 1 to n once: the q-th percentile of that
// distribution is q/100 * n µs exactly, which the histogram must match within 0.1%.
func uniformHistogram(n int) *Histogram {
	h := NewHistogram()
	for us := 1; us <= n; us++ {
		h.Record(time.Duration(us) * time.Microsecond)
	}
	return h
}

func TestHistogramQuantiles(t *testing.T) {
	t.Parallel()
	const n = 100000 // 1 µs .. 100 ms
	h := uniformHistogram(n)
	tests := []struct {
		q      float64
		wantMs float64
	}{
		{0, 0.001}, {50, 50}, {90, 90}, {99, 99}, {99.9, 99.9}, {100, 100},
	}
	for _, tt := range tests {
		have := h.QuantileMs(tt.q)
		if rel := math.Abs(have-tt.wantMs) / tt.wantMs; rel > 1e-3 {
			t.Errorf("QuantileMs(%v) = %v, want %v within 0.1%% (off by %.3g)", tt.q, have, tt.wantMs, rel)
		}
	}
	if have := h.MaxMs(); math.Abs(have-100) > 0.1 {
		t.Errorf("MaxMs = %v, want 100 within 0.1%%", have)
	}
	if h.Count() != n {
		t.Errorf("Count = %d, want %d", h.Count(), n)
	}
}

// TestHistogramExponential checks the tail against a known distribution: for an exponential
// with mean m the q-quantile is -m ln(1-q).
func TestHistogramExponential(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	h := NewHistogram()
	const mean = 2 * time.Millisecond
	for range 200000 {
		h.Record(time.Duration(rng.ExpFloat64() * float64(mean)))
	}
	for _, q := range []float64{50, 90, 99} {
		want := -2 * math.Log(1-q/100) // ms
		if have := h.QuantileMs(q); math.Abs(have-want)/want > 0.03 {
			t.Errorf("QuantileMs(%v) = %.4f ms, want %.4f ms within 3%% (sampling noise)", q, have, want)
		}
	}
}

func TestHistogramRecordClamps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		have        time.Duration
		wantMs      float64
		wantClamped int64
	}{
		{"sub-microsecond rounds to 0", 400 * time.Nanosecond, 0, 0},
		{"rounds to nearest µs", 1500 * time.Nanosecond, 0.002, 0},
		{"max itself", MaxLatency, float64(MaxLatency.Milliseconds()), 0},
		{"above max clamps", time.Hour, float64(MaxLatency.Milliseconds()), 1},
		{"largest duration clamps", math.MaxInt64, float64(MaxLatency.Milliseconds()), 1},
		{"negative clamps to 0", -time.Second, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := NewHistogram()
			h.Record(tt.have)
			if h.Count() != 1 {
				t.Fatalf("Count = %d, want 1: a value was dropped", h.Count())
			}
			// The max is the highest value equivalent to the recorded one: within 0.1% above.
			if have := h.MaxMs(); have < tt.wantMs || have > tt.wantMs*1.001+0.001 {
				t.Errorf("MaxMs = %v, want %v (+0.1%%)", have, tt.wantMs)
			}
			if h.Clamped() != tt.wantClamped {
				t.Errorf("Clamped = %d, want %d", h.Clamped(), tt.wantClamped)
			}
		})
	}
}

func TestHistogramMergeReset(t *testing.T) {
	t.Parallel()
	a, b := uniformHistogram(1000), NewHistogram()
	b.Record(time.Hour) // clamped
	b.Record(5 * time.Millisecond)
	a.Merge(b)
	if a.Count() != 1002 || a.Clamped() != 1 {
		t.Errorf("after Merge Count = %d Clamped = %d, want 1002, 1", a.Count(), a.Clamped())
	}
	if a.MaxMs() < float64(MaxLatency.Milliseconds()) {
		t.Errorf("after Merge MaxMs = %v, want the clamped max", a.MaxMs())
	}
	a.Reset()
	if a.Count() != 0 || a.Clamped() != 0 || a.MaxMs() != 0 || a.QuantileMs(99) != 0 || a.Percentiles() != nil {
		t.Errorf("after Reset: Count %d Clamped %d MaxMs %v p99 %v", a.Count(), a.Clamped(), a.MaxMs(), a.QuantileMs(99))
	}
}

func TestHistogramPercentiles(t *testing.T) {
	t.Parallel()
	h := uniformHistogram(100000)
	pts := h.Percentiles()
	if len(pts) < 20 {
		t.Fatalf("%d points, want a curve of at least 20", len(pts))
	}
	if pts[0].Percentile != 0 || pts[len(pts)-1].Percentile != 100 {
		t.Errorf("curve spans %v..%v, want 0..100", pts[0].Percentile, pts[len(pts)-1].Percentile)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].Percentile < pts[i-1].Percentile || pts[i].Ms < pts[i-1].Ms {
			t.Fatalf("curve not monotone at %d: %+v after %+v", i, pts[i], pts[i-1])
		}
	}
	// The curve agrees with QuantileMs where they meet.
	for _, p := range pts {
		if p.Percentile > 0 && p.Percentile < 100 {
			if want := h.QuantileMs(p.Percentile); math.Abs(p.Ms-want) > want*1e-3 {
				t.Errorf("point %+v, QuantileMs = %v", p, want)
			}
		}
	}
}

func TestHistogramFileRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have *Histogram
	}{
		{"empty", NewHistogram()},
		{"uniform", uniformHistogram(5000)},
		{"clamped", func() *Histogram { h := uniformHistogram(10); h.Record(time.Hour); return h }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if _, err := tt.have.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			have, err := ReadHistogram(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if !have.h.Equals(tt.have.h) || have.Clamped() != tt.have.Clamped() {
				t.Errorf("round trip changed the histogram: count %d->%d clamped %d->%d",
					tt.have.Count(), have.Count(), tt.have.Clamped(), have.Clamped())
			}
		})
	}
}

func TestReadHistogramRejects(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if _, err := uniformHistogram(100).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var good map[string]any
	if err := json.Unmarshal(buf.Bytes(), &good); err != nil {
		t.Fatal(err)
	}
	with := func(k string, v any) string {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		m[k] = v
		b, _ := json.Marshal(m)
		return string(b)
	}
	tests := []struct {
		name     string
		have     string
		want     error
		wantText string
	}{
		{"schema", with("schema", "other/v1"), ErrSchema, `"other/v1"`},
		{"unit", with("unit", "ns"), ErrCorrupt, `unit "ns"`},
		{"geometry", with("highest", 1000), ErrCorrupt, "highest=1000"},
		{"count", with("count", 99), ErrCorrupt, "envelope says 99"},
		{"payload", with("histogram", "bm90IGEgaGlzdG9ncmFt"), ErrCorrupt, "field histogram"},
		{"not json", "[", ErrCorrupt, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadHistogram(strings.NewReader(tt.have))
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err = %v, want %v containing %q", err, tt.want, tt.wantText)
			}
		})
	}
}

func TestHistogramRecordAllocatesNothing(t *testing.T) {
	h := NewHistogram()
	d := 1234 * time.Microsecond
	if n := testing.AllocsPerRun(1000, func() { h.Record(d); h.Record(time.Hour) }); n != 0 {
		t.Errorf("Record allocates %v times per call, want 0", n)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, 1024)
	for i := range lat {
		lat[i] = time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Record(lat[i&1023])
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestHistogramForEach: the buckets ForEach reports hold every recording, each at a value within
// the histogram's 0.1% of what was recorded, fastest first.
func TestHistogramForEach(t *testing.T) {
	h := NewHistogram()
	recorded := []time.Duration{0, 7 * time.Microsecond, 7 * time.Microsecond, 1234567 * time.Nanosecond, 95 * time.Millisecond, 2 * time.Second}
	for _, d := range recorded {
		h.Record(d)
	}
	var got []time.Duration
	var n int64
	h.ForEach(func(d time.Duration, count int64) {
		n += count
		for range count {
			got = append(got, d)
		}
	})
	if n != h.Count() || len(got) != len(recorded) {
		t.Fatalf("ForEach counted %d (%d values), the histogram %d", n, len(got), h.Count())
	}
	for i, d := range recorded {
		if diff := math.Abs(float64(got[i] - d)); diff > float64(d)/1000+float64(time.Microsecond) {
			t.Errorf("value %d: ForEach says %v, recorded %v (beyond 0.1%% + 1 µs)", i, got[i], d)
		}
	}
}
