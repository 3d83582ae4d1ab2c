package workload

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestNewMixErrors(t *testing.T) {
	t.Parallel()
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name    string
		names   []string
		weights []float64
		wantErr string // "" = valid
	}{
		{"no names", nil, nil, "mix names: empty"},
		{"length mismatch", []string{"a", "b"}, []float64{1}, "1 weights for 2 names"},
		{"empty name", []string{"a", ""}, []float64{1, 1}, "names[1]: empty"},
		{"duplicate name", []string{"a", "b", "a"}, []float64{1, 1, 1}, `names[2] "a": same as names[0]`},
		{"negative weight", []string{"a", "b"}, []float64{1, -1}, "weights[1] (b) -1"},
		{"NaN weight", []string{"a"}, []float64{nan}, "weights[0] (a) NaN"},
		{"Inf weight", []string{"a"}, []float64{inf}, "weights[0] (a) +Inf"},
		{"all zero", []string{"a", "b"}, []float64{0, 0}, "weights sum 0"},
		{"overflowing sum", []string{"a", "b"}, []float64{math.MaxFloat64, math.MaxFloat64}, "weights sum +Inf"},
		{"one endpoint", []string{"a"}, []float64{3}, ""},
		{"zero weight kept", []string{"a", "b"}, []float64{0, 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := NewMix(tt.names, tt.weights)
			if tt.wantErr == "" {
				if err != nil || m.Len() != len(tt.names) {
					t.Fatalf("NewMix = %v, %v; want %d endpoints", m, err, len(tt.names))
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v; want ErrInvalid containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestMixFrequencies draws 300,000 times and checks each endpoint's share against its normalized
// weight within 5 binomial sigma (<= 0.0046 absolute). A zero weight must never be drawn.
func TestMixFrequencies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		weights []float64
	}{
		{"single", []float64{1}},
		{"equal", []float64{1, 1, 1, 1}},
		{"skewed with zero", []float64{1, 2, 3, 0, 4}},
		{"tiny and huge", []float64{1e-3, 1, 1000}},
		{"fractions", []float64{0.7, 0.2, 0.1}},
	}
	const draws = 300_000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			names := make([]string, len(tt.weights))
			sum := 0.0
			for i, w := range tt.weights {
				names[i] = string(rune('a' + i))
				sum += w
			}
			m, err := NewMix(names, tt.weights)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(5, 6))
			counts := make([]int, m.Len())
			for range draws {
				counts[m.Draw(r)]++
			}
			for i, w := range tt.weights {
				want := w / sum
				if m.Weight(i) != want {
					t.Errorf("Weight(%d) = %v, want %v", i, m.Weight(i), want)
				}
				have := float64(counts[i]) / draws
				if w == 0 && counts[i] != 0 {
					t.Errorf("endpoint %d has weight 0 but was drawn %d times", i, counts[i])
				}
				if sigma := math.Sqrt(want * (1 - want) / draws); math.Abs(have-want) > 5*sigma {
					t.Errorf("endpoint %d share = %.4f, want %.4f ± %.4f", i, have, want, 5*sigma)
				}
			}
		})
	}
}

func TestMixNamesIsACopy(t *testing.T) {
	t.Parallel()
	in := []string{"read", "write"}
	m, err := NewMix(in, []float64{9, 1})
	if err != nil {
		t.Fatal(err)
	}
	in[0] = "changed by caller"
	out := m.Names()
	out[1] = "changed by reader"
	if have := m.Names(); have[0] != "read" || have[1] != "write" || m.Name(1) != "write" {
		t.Fatalf("Names() = %q after outside edits, want [read write]", have)
	}
}

func BenchmarkMixDraw(b *testing.B) {
	m, err := NewMix([]string{"search", "checkout", "login", "upload"}, []float64{70, 20, 9, 1})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	sink := 0
	for b.Loop() {
		sink += m.Draw(r)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "draws/s")
	_ = sink
}
