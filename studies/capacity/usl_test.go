package capacity

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestFitUSLRecoversKnownParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		lambda, sigma, kappa float64
		noise                float64
	}{
		{"retrograde", 1000, 0.05, 0.002, 0},
		{"contention only", 20000, 0.1, 0, 0},
		{"linear", 500, 0, 0, 0},
		{"noisy 1%", 15000, 0.08, 0.004, 0.01},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(1, 2))
			var pts []USLPoint
			for n := 1.0; n <= 32; n *= 1.5 {
				x := uslX(tc.lambda, tc.sigma, tc.kappa, n) * (1 + tc.noise*r.NormFloat64())
				pts = append(pts, USLPoint{N: n, X: x})
			}
			u, err := FitUSL(pts)
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-3 + 5*tc.noise
			if math.Abs(u.Lambda-tc.lambda)/tc.lambda > tol {
				t.Errorf("lambda = %v, want %v within %.1f%%", u.Lambda, tc.lambda, 100*tol)
			}
			if math.Abs(u.Sigma-tc.sigma) > 0.01+tc.noise*2 {
				t.Errorf("sigma = %v, want %v", u.Sigma, tc.sigma)
			}
			if math.Abs(u.Kappa-tc.kappa) > 2e-4+tc.noise*0.05 {
				t.Errorf("kappa = %v, want %v", u.Kappa, tc.kappa)
			}
			if tc.noise == 0 && u.R2 < 0.9999 {
				t.Errorf("R2 = %v on exact data, want ~1", u.R2)
			}
			if tc.kappa == 0 && u.PeakN != nil && *u.PeakN < 1000 {
				t.Errorf("PeakN = %v for kappa 0, want none (or far beyond the data)", *u.PeakN)
			}
			if tc.kappa > 0 {
				want := math.Sqrt((1 - tc.sigma) / tc.kappa)
				if u.PeakN == nil || math.Abs(*u.PeakN-want)/want > 0.05+5*tc.noise {
					t.Errorf("PeakN = %v, want %v", u.PeakN, want)
				}
			}
			if len(u.Points) != len(pts) {
				t.Errorf("%d fitted points, want %d", len(u.Points), len(pts))
			}
		})
	}
}

func TestFitUSLNeedsThreePoints(t *testing.T) {
	t.Parallel()
	_, err := FitUSL([]USLPoint{{1, 10}, {2, 19}, {2, 18}})
	if !errors.Is(err, ErrTooFewPoints) {
		t.Fatalf("err = %v, want ErrTooFewPoints", err)
	}
	if _, err := FitUSL([]USLPoint{{0, 10}, {2, 19}, {3, 25}}); err == nil {
		t.Fatal("n = 0 accepted")
	}
}
