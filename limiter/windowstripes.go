package limiter

import (
	"hash/maphash"
	"sync"
)

// stateStripes is the storage of the window algorithms' in-memory twins: per-key states of type S
// spread over numStripes mutex-guarded maps (the layout of TokenBucket). Looking up an existing
// key allocates nothing; a new key allocates its map entry and state once. Keys never expire.
type stateStripes[S any] struct {
	seed    maphash.Seed
	stripes [numStripes]stateStripe[S]
}

// stateStripe is one lock and its keys, padded to a 64-byte cache line.
type stateStripe[S any] struct {
	mu sync.Mutex
	m  map[string]*S
	_  [64 - 16]byte
}

func (s *stateStripes[S]) init() {
	s.seed = maphash.MakeSeed()
	for i := range s.stripes {
		s.stripes[i].m = make(map[string]*S)
	}
}

// lockBytes locks key's stripe and returns it with key's state, created zero if missing. The
// caller must unlock stripe.mu.
func (s *stateStripes[S]) lockBytes(key []byte) (stripe *stateStripe[S], st *S) {
	stripe = &s.stripes[maphash.Bytes(s.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	st = stripe.m[string(key)] // no allocation: the compiler looks up without a string copy
	if st == nil {
		st = new(S)
		stripe.m[string(key)] = st
	}
	return stripe, st
}

// lockString is lockBytes for a string key.
func (s *stateStripes[S]) lockString(key string) (stripe *stateStripe[S], st *S) {
	stripe = &s.stripes[maphash.String(s.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	st = stripe.m[key]
	if st == nil {
		st = new(S)
		stripe.m[key] = st
	}
	return stripe, st
}

// get returns a copy of key's state and whether the key exists.
func (s *stateStripes[S]) get(key string) (S, bool) {
	stripe := &s.stripes[maphash.String(s.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	defer stripe.mu.Unlock()
	if st := stripe.m[key]; st != nil {
		return *st, true
	}
	var zero S
	return zero, false
}

// len returns the number of keys held.
func (s *stateStripes[S]) len() int {
	n := 0
	for i := range s.stripes {
		stripe := &s.stripes[i]
		stripe.mu.Lock()
		n += len(stripe.m)
		stripe.mu.Unlock()
	}
	return n
}
