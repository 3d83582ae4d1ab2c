package limiter

import (
	"hash/maphash"
	"sync"
)

// stateShards is the storage of the window algorithms' in-memory twins: per-key states of type S
// spread over numShards mutex-guarded maps (the layout of TokenBucket). Looking up an existing
// key allocates nothing; a new key allocates its map entry and state once. Keys never expire.
type stateShards[S any] struct {
	seed   maphash.Seed
	shards [numShards]stateShard[S]
}

// stateShard is one lock and its keys, padded to a 64-byte cache line.
type stateShard[S any] struct {
	mu sync.Mutex
	m  map[string]*S
	_  [64 - 16]byte
}

func (s *stateShards[S]) init() {
	s.seed = maphash.MakeSeed()
	for i := range s.shards {
		s.shards[i].m = make(map[string]*S)
	}
}

// lockBytes locks key's shard and returns it with key's state, created zero if missing. The
// caller must unlock sh.mu.
func (s *stateShards[S]) lockBytes(key []byte) (sh *stateShard[S], st *S) {
	sh = &s.shards[maphash.Bytes(s.seed, key)&(numShards-1)]
	sh.mu.Lock()
	st = sh.m[string(key)] // no allocation: the compiler looks up without a string copy
	if st == nil {
		st = new(S)
		sh.m[string(key)] = st
	}
	return sh, st
}

// lockString is lockBytes for a string key.
func (s *stateShards[S]) lockString(key string) (sh *stateShard[S], st *S) {
	sh = &s.shards[maphash.String(s.seed, key)&(numShards-1)]
	sh.mu.Lock()
	st = sh.m[key]
	if st == nil {
		st = new(S)
		sh.m[key] = st
	}
	return sh, st
}

// get returns a copy of key's state and whether the key exists.
func (s *stateShards[S]) get(key string) (S, bool) {
	sh := &s.shards[maphash.String(s.seed, key)&(numShards-1)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if st := sh.m[key]; st != nil {
		return *st, true
	}
	var zero S
	return zero, false
}

// len returns the number of keys held.
func (s *stateShards[S]) len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
