package workload

import (
	"fmt"
	"math/rand/v2"
)

// Uniform draws ranks 0..n-1 with equal probability 1/n: the no-skew baseline.
// It holds only n, so it is safe for concurrent use with one *rand.Rand per goroutine.
type Uniform struct {
	n uint64
}

// NewUniform returns a uniform distribution over n >= 1 ranks.
func NewUniform(n uint64) (*Uniform, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: uniform n %d: must be >= 1 rank", ErrInvalid, n)
	}
	return &Uniform{n: n}, nil
}

// N is the number of ranks.
func (u *Uniform) N() uint64 { return u.n }

// Draw returns a rank in [0, n), each with probability 1/n (rand.Uint64N is unbiased). It
// allocates nothing.
func (u *Uniform) Draw(r *rand.Rand) uint64 { return r.Uint64N(u.n) }
