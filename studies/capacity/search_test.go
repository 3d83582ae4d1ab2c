package capacity

import (
	"context"
	"testing"
)

// A fake machine that passes below a capacity: the search must bracket it.
func TestSearchBracketsTheKnee(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		capacity float64
		s        Search
		wantLo   float64 // the knee must be in [wantLo, capacity]
		wantN    int     // steps taken
	}{
		{"geometric then bisect", 11_000, Search{Start: 1000, Factor: 2, Max: 100_000, Bisect: 3, Tolerance: 0.05}, 8000, 5 + 3},
		{"never breaks", 1e9, Search{Start: 1000, Factor: 4, Max: 10_000, Bisect: 3, Tolerance: 0.05}, 10_000, 3},
		{"first step fails", 300, Search{Start: 1000, Factor: 2, Max: 10_000, Bisect: 4, Tolerance: 0.05}, 250, 1 + 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rates []float64
			measure := func(_ context.Context, rate float64, phase string) (Step, error) {
				rates = append(rates, rate)
				return Step{Offered: rate, Achieved: min(rate, tc.capacity), Pass: rate <= tc.capacity, Phase: phase}, nil
			}
			steps, k, err := tc.s.run(context.Background(), measure)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != tc.wantN {
				t.Errorf("%d steps %v, want %d", len(steps), rates, tc.wantN)
			}
			if k == nil || k.Offered < tc.wantLo || k.Offered > tc.capacity {
				t.Fatalf("knee %+v, want offered in [%v, %v] (rates %v)", k, tc.wantLo, tc.capacity, rates)
			}
			for _, r := range rates {
				if r > tc.s.Max {
					t.Errorf("rate %v beyond max %v", r, tc.s.Max)
				}
			}
		})
	}
}
