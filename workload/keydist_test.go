package workload

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestKeyDistConstructorErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		build   func() (KeyDist, error)
		wantErr string // "" = valid
	}{
		{"uniform n 0", func() (KeyDist, error) { return NewUniform(0) }, "uniform n 0"},
		{"uniform n 1", func() (KeyDist, error) { return NewUniform(1) }, ""},
		{"hotspot n 1", func() (KeyDist, error) { return NewHotspot(1, 1, 0.5) }, "hotspot n 1"},
		{"hotspot hot_keys 0", func() (KeyDist, error) { return NewHotspot(10, 0, 0.5) }, "hot_keys 0"},
		{"hotspot hot_keys n", func() (KeyDist, error) { return NewHotspot(10, 10, 0.5) }, "hot_keys 10"},
		{"hotspot hot_share negative", func() (KeyDist, error) { return NewHotspot(10, 1, -0.1) }, "hot_share -0.1"},
		{"hotspot hot_share above 1", func() (KeyDist, error) { return NewHotspot(10, 1, 1.5) }, "hot_share 1.5"},
		{"hotspot hot_share NaN", func() (KeyDist, error) { return NewHotspot(10, 1, math.NaN()) }, "hot_share NaN"},
		{"hotspot hot_share 0", func() (KeyDist, error) { return NewHotspot(10, 1, 0) }, ""},
		{"hotspot hot_share 1", func() (KeyDist, error) { return NewHotspot(10, 9, 1) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := tt.build()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("error = %v, want nil", err)
				}
				if d.N() == 0 {
					t.Fatalf("N() = 0")
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v; want ErrInvalid naming %q", err, tt.wantErr)
			}
		})
	}
}

// TestKeyDistShares draws 200,000 ranks and checks the share of a set of ranks against the
// distribution's formula, within 5 binomial sigma (sqrt(p(1-p)/N) <= 0.0012, so 5 sigma <= 0.006).
func TestKeyDistShares(t *testing.T) {
	t.Parallel()
	must := func(d KeyDist, err error) KeyDist {
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name string
		dist KeyDist
		in   func(k uint64) bool // the set whose share is checked
		want float64
	}{
		{"uniform lower half", must(NewUniform(1000)), func(k uint64) bool { return k < 500 }, 0.5},
		{"uniform single rank", must(NewUniform(4)), func(k uint64) bool { return k == 3 }, 0.25},
		{"hotspot hot set", must(NewHotspot(1000, 10, 0.8)), func(k uint64) bool { return k < 10 }, 0.8},
		{"hotspot one hot key", must(NewHotspot(1000, 1, 0.5)), func(k uint64) bool { return k == 0 }, 0.5},
		// Inside the cold set the draw is uniform: ranks 10..504 are half of the 990 cold ranks.
		{"hotspot cold half", must(NewHotspot(1000, 10, 0.8)), func(k uint64) bool { return k >= 10 && k < 505 }, 0.1},
		{"hotspot share 0", must(NewHotspot(1000, 10, 0)), func(k uint64) bool { return k < 10 }, 0},
		{"hotspot share 1", must(NewHotspot(1000, 10, 1)), func(k uint64) bool { return k < 10 }, 1},
	}
	const draws = 200_000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(11, 12))
			n, hits := tt.dist.N(), 0
			for range draws {
				k := tt.dist.Draw(r)
				if k >= n {
					t.Fatalf("Draw = %d, want < %d", k, n)
				}
				if tt.in(k) {
					hits++
				}
			}
			have := float64(hits) / draws
			if sigma := math.Sqrt(tt.want * (1 - tt.want) / draws); math.Abs(have-tt.want) > 5*sigma {
				t.Fatalf("share = %.4f, want %.4f ± %.4f", have, tt.want, 5*sigma)
			}
		})
	}
}

func BenchmarkKeyDistDraw(b *testing.B) {
	u, _ := NewUniform(1_000_000)
	h, _ := NewHotspot(1_000_000, 100, 0.9)
	for _, bc := range []struct {
		name string
		dist KeyDist
	}{{"uniform", u}, {"hotspot", h}} {
		b.Run(bc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			var sink uint64
			for b.Loop() {
				sink += bc.dist.Draw(r)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "draws/s")
			_ = sink
		})
	}
}
