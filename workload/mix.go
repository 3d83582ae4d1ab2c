package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Mix is a weighted choice among named endpoints: Draw returns index i with probability
// weights[i] / sum(weights).
//
// It uses Walker's alias method (in Vose's numerically stable construction): the n outcomes
// are spread over n equal columns of height 1; column i keeps outcome i with probability prob[i]
// and gives the rest of the column to alias[i]. A draw picks a column uniformly and flips one
// biased coin: O(1) whatever n is, two random numbers, no allocation.
//
// A Mix is immutable after NewMix, so it is safe for concurrent use with one *rand.Rand per goroutine.
type Mix struct {
	names   []string
	weights []float64 // normalized to sum 1
	prob    []float64 // per column: the chance of keeping the column's own outcome
	alias   []int     // per column: the outcome that takes the rest of the column
}

// NewMix returns a mix of len(names) endpoints. names must be non-empty and unique, weights the
// same length, each weight finite and >= 0 and their sum > 0. A zero weight keeps the name (so
// indices stay stable) but never draws it.
func NewMix(names []string, weights []float64) (*Mix, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: mix names: empty; give at least one endpoint", ErrInvalid)
	}
	if len(weights) != len(names) {
		return nil, fmt.Errorf("%w: mix weights: %d weights for %d names; give one weight per name",
			ErrInvalid, len(weights), len(names))
	}
	seen := make(map[string]int, len(names))
	sum := 0.0
	for i, name := range names {
		if name == "" {
			return nil, fmt.Errorf("%w: mix names[%d]: empty; every endpoint needs a name", ErrInvalid, i)
		}
		if j, dup := seen[name]; dup {
			return nil, fmt.Errorf("%w: mix names[%d] %q: same as names[%d]; names must be unique",
				ErrInvalid, i, name, j)
		}
		seen[name] = i
		w := weights[i]
		if !(w >= 0) || math.IsInf(w, 1) { // also rejects NaN
			return nil, fmt.Errorf("%w: mix weights[%d] (%s) %v: must be finite and >= 0", ErrInvalid, i, name, w)
		}
		sum += w
	}
	if !(sum > 0) || math.IsInf(sum, 1) {
		return nil, fmt.Errorf("%w: mix weights sum %v: must be finite and > 0; give some endpoint a positive weight",
			ErrInvalid, sum)
	}

	n := len(names)
	m := &Mix{
		names:   append([]string(nil), names...),
		weights: make([]float64, n),
		prob:    make([]float64, n),
		alias:   make([]int, n),
	}
	// Vose: scale each weight to p_i * n, so the average column is exactly 1. Pair one column
	// below 1 (small) with one above (large): the small column is topped up by the large one,
	// which loses that much and is re-filed as small or large.
	scaled := make([]float64, n)
	var small, large []int
	for i, w := range weights {
		m.weights[i] = w / sum
		scaled[i] = m.weights[i] * float64(n)
		m.alias[i] = i
		if scaled[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		m.prob[s] = scaled[s]
		m.alias[s] = l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What is left is 1 up to rounding: those columns keep their own outcome.
	for _, i := range large {
		m.prob[i] = 1
	}
	for _, i := range small {
		m.prob[i] = 1
	}
	return m, nil
}

// Draw returns an endpoint index in [0, Len()). It allocates nothing.
func (m *Mix) Draw(r *rand.Rand) int {
	col := r.IntN(len(m.prob))
	if r.Float64() < m.prob[col] {
		return col
	}
	return m.alias[col]
}

// Len is the number of endpoints.
func (m *Mix) Len() int { return len(m.names) }

// Name is endpoint i's name.
func (m *Mix) Name(i int) string { return m.names[i] }

// Names returns a copy of the endpoint names, in index order.
func (m *Mix) Names() []string { return append([]string(nil), m.names...) }

// Weight is endpoint i's normalized weight: its expected share of draws.
func (m *Mix) Weight(i int) float64 { return m.weights[i] }
