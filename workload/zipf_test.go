package workload

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestNewZipfErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		n       uint64
		theta   float64
		wantErr string // "" = valid; else a substring naming the field
	}{
		{"n zero", 0, 0.99, "zipf n 0"},
		{"n above 2^40", MaxZipfN + 1, 0.99, "zipf n"},
		{"theta zero", 100, 0, "zipf theta 0"},
		{"theta negative", 100, -1, "zipf theta -1"},
		{"theta NaN", 100, math.NaN(), "zipf theta NaN"},
		{"theta +Inf", 100, math.Inf(1), "zipf theta +Inf"},
		{"theta above max", 100, MaxTheta + 1, "zipf theta 65"},
		{"n one", 1, 0.99, ""},
		{"n max", MaxZipfN, 0.99, ""},
		{"theta tiny", 100, 1e-9, ""},
		{"theta one", 100, 1, ""},
		{"theta max", 100, MaxTheta, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			z, err := NewZipf(tt.n, tt.theta)
			if tt.wantErr == "" {
				if err != nil || z == nil {
					t.Fatalf("NewZipf(%d, %v) = %v, %v; want a Zipf", tt.n, tt.theta, z, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewZipf(%d, %v) error = %v; want ErrInvalid naming %q", tt.n, tt.theta, err, tt.wantErr)
			}
		})
	}
}

// TestZipfTopShares compares the empirical share of the top-1 and top-10 ranks with the analytic
// TopShare for n = 10,000.
//
// Tolerance: with N independent draws the empirical share of a set with true share p is a
// binomial proportion with standard deviation sigma = sqrt(p(1-p)/N). We allow 5 sigma: a correct
// sampler lands outside with probability 6e-7 per check (and the seed is fixed, so the test is
// deterministic anyway), while N = 5e5 makes 5 sigma at most 0.0036 absolute — far below what an
// off-by-one rank (top-1 share drops by a factor 2^theta) or a wrong exponent would move.
func TestZipfTopShares(t *testing.T) {
	t.Parallel()
	const n, draws = 10_000, 500_000
	for _, theta := range []float64{0.5, 0.99, 1.0, 1.2} {
		z, err := NewZipf(n, theta)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(42, uint64(theta*1000)))
		var top1, top10 int
		for range draws {
			k := z.Draw(r)
			if k >= n {
				t.Fatalf("theta %v: Draw = %d, want < %d", theta, k, n)
			}
			if k < 1 {
				top1++
			}
			if k < 10 {
				top10++
			}
		}
		for _, c := range []struct {
			k    uint64
			have int
		}{{1, top1}, {10, top10}} {
			want := TopShare(n, theta, c.k)
			have := float64(c.have) / draws
			sigma := math.Sqrt(want * (1 - want) / draws)
			if math.Abs(have-want) > 5*sigma {
				t.Errorf("theta %v top-%d share: have %.5f, want %.5f ± %.5f (5 sigma)", theta, c.k, have, want, 5*sigma)
			}
		}
	}
}

// TestZipfChiSquare checks the whole distribution, not just its head: Pearson's chi-square of
// the empirical rank counts against ZipfProb, with consecutive ranks pooled until each bin expects
// at least 20 draws (so the chi-square approximation holds). For a correct sampler the statistic
// has mean dof and standard deviation sqrt(2 dof); we fail above dof + 6 sqrt(2 dof), which a
// correct sampler exceeds with probability ~1e-8 (fixed seed: deterministic), while a sampler off
// by 10% on 100 of the bins adds ~20 sigma.
func TestZipfChiSquare(t *testing.T) {
	t.Parallel()
	const n, draws = 1000, 100_000
	for _, theta := range []float64{0.1, 0.5, 0.99, 1.0, 1.01, 1.5, 2, 5} {
		z, err := NewZipf(n, theta)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, math.Float64bits(theta)))
		counts := make([]int, n)
		for range draws {
			counts[z.Draw(r)]++
		}
		// P(k) = P(0) * (k+1)^-theta: one ZipfProb call (each costs a Harmonic evaluation).
		p0 := ZipfProb(n, theta, 0)
		var chi2, binObs, binExp float64
		bins := 0
		for k := range uint64(n) {
			binObs += float64(counts[k])
			binExp += p0 * math.Pow(float64(k+1), -theta) * draws
			if binExp >= 20 || k == n-1 {
				chi2 += (binObs - binExp) * (binObs - binExp) / binExp
				bins++
				binObs, binExp = 0, 0
			}
		}
		dof := float64(bins - 1)
		if limit := dof + 6*math.Sqrt(2*dof); chi2 > limit {
			t.Errorf("theta %v: chi-square %.1f over %d bins, limit %.1f", theta, chi2, bins, limit)
		}
	}
}

// TestZipfEdges draws at the ends of the parameter ranges: every rank must stay in [0, n) and the
// degenerate cases must be what the formula says.
func TestZipfEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		n        uint64
		theta    float64
		wantOnly int64 // >= 0: every draw must be this rank
	}{
		{"single rank", 1, 0.99, 0},
		{"single rank steep", 1, MaxTheta, 0},
		{"max theta", 1_000_000, MaxTheta, 0}, // P(rank > 0) < 2^-64
		{"max n", MaxZipfN, 0.99, -1},
		{"max n flat", MaxZipfN, 1e-6, -1},
		{"max n steep", MaxZipfN, 3, -1},
		{"two ranks", 2, 1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			z, err := NewZipf(tt.n, tt.theta)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 20_000 {
				k := z.Draw(r)
				if k >= tt.n {
					t.Fatalf("Draw = %d, want < %d", k, tt.n)
				}
				if tt.wantOnly >= 0 && k != uint64(tt.wantOnly) {
					t.Fatalf("Draw = %d, want only %d", k, tt.wantOnly)
				}
			}
		})
	}
}

// TestZipfFlatIsUniform: as theta -> 0 the distribution is uniform, so over n = 2^40 ranks the
// mean draw must be n/2 (a sampler stuck near either end would fail by orders of magnitude).
func TestZipfFlatIsUniform(t *testing.T) {
	t.Parallel()
	z, err := NewZipf(MaxZipfN, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const draws = 100_000
	sum := 0.0
	for range draws {
		sum += float64(z.Draw(r)) / float64(MaxZipfN)
	}
	// Uniform on [0, 1): mean 1/2, sd 1/sqrt(12 N) ~ 0.0009; allow 5 sd. theta = 1e-9 moves
	// the mean by less than 1e-9 * ln(2^40) ~ 3e-8, nothing at this resolution.
	if have := sum / draws; math.Abs(have-0.5) > 5/math.Sqrt(12*draws) {
		t.Fatalf("mean rank / n = %.4f, want 0.5", have)
	}
}

func BenchmarkZipfDraw(b *testing.B) {
	for _, theta := range []float64{0.5, 0.99, 1.2} {
		b.Run(thetaName(theta), func(b *testing.B) {
			z, err := NewZipf(1_000_000, theta)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			var sink uint64
			for b.Loop() {
				sink += z.Draw(r)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "draws/s")
			_ = sink
		})
	}
}

func thetaName(theta float64) string {
	switch theta {
	case 0.5:
		return "theta=0.5"
	case 0.99:
		return "theta=0.99"
	default:
		return "theta=1.2"
	}
}
