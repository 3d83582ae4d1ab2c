package workload

import "math/rand/v2"

// Stream is a seeded, reproducible request stream: each Next draws a tenant rank from a KeyDist
// and an endpoint index from a Mix. The same seed, KeyDist and Mix always give the same sequence.
//
// A Stream owns its generator and is not safe for concurrent use: give each goroutine, part or
// remote generator its own sub-stream with Split. Sub-streams are deterministic functions of
// (seed, i) alone, so part i of a distributed run replays exactly whoever runs it.
type Stream struct {
	seed uint64
	keys KeyDist
	mix  *Mix
	src  rand.PCG
	rng  *rand.Rand
}

// NewStream returns a stream seeded with seed. keys is required (NewStream panics on nil: it is
// a wiring error, not an input); a nil mix means a single endpoint, index 0.
func NewStream(seed uint64, keys KeyDist, mix *Mix) *Stream {
	if keys == nil {
		panic("workload: NewStream keys is nil; pass a KeyDist such as NewZipf(n, DefaultTheta)")
	}
	s := &Stream{seed: seed, keys: keys, mix: mix}
	s.src.Seed(seed, DeriveSeed(seed, streamTag))
	s.rng = rand.New(&s.src)
	return s
}

// streamTag tags the PCG's second seed word for streams (see poissonStream).
const streamTag = 0xd1b54a32d192ed03

// Next returns the next request's tenant rank in [0, keys.N()) and endpoint index in
// [0, mix.Len()). It allocates nothing.
func (s *Stream) Next() (tenant uint64, endpoint int) {
	tenant = s.keys.Draw(s.rng)
	if s.mix != nil {
		endpoint = s.mix.Draw(s.rng)
	}
	return tenant, endpoint
}

// Seed is the seed the stream was built with.
func (s *Stream) Seed() uint64 { return s.seed }

// Split returns sub-stream i: a fresh stream over the same KeyDist and Mix seeded with
// DeriveSeed(seed, i). It does not depend on how far this stream has been read, and different i
// give statistically independent sequences.
func (s *Stream) Split(i uint64) *Stream {
	return NewStream(DeriveSeed(s.seed, i), s.keys, s.mix)
}

// Rand returns the stream's generator, for drawing related per-request values (costs, jitter)
// from the same reproducible sequence. It is not safe for concurrent use.
func (s *Stream) Rand() *rand.Rand { return s.rng }

// DeriveSeed mixes a parent seed and an index into a child seed: SplitMix64's finalizer
// (Steele, Lea, Flood 2014) applied to seed + (i+1)*golden and then to the result xor seed.
// The finalizer is a bijection with full avalanche, so children of one parent never collide, and
// neighbouring seeds or indices give unrelated children. Use it to seed pacers, sub-streams and
// per-part generators from the single run seed.
func DeriveSeed(seed, i uint64) uint64 {
	const golden = 0x9e3779b97f4a7c15
	return splitmix64(splitmix64(seed+(i+1)*golden) ^ seed)
}

// splitmix64 is SplitMix64's output function: a bijection on uint64.
func splitmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
