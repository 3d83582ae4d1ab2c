package workload

import "math/rand/v2"

// KeyDist is a distribution over key ranks 0..N()-1. Rank 0 is the hottest key where the
// distribution has a notion of heat (Zipf, Hotspot). Draw takes a caller-owned generator, so one
// KeyDist value can be shared by many goroutines as long as each brings its own *rand.Rand.
type KeyDist interface {
	// Draw returns a rank in [0, N()). It allocates nothing.
	Draw(r *rand.Rand) uint64
	// N is the number of ranks.
	N() uint64
}

var (
	_ KeyDist = (*Zipf)(nil)
	_ KeyDist = (*Uniform)(nil)
	_ KeyDist = (*Hotspot)(nil)
)
