package limiter

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"
)

// numStripes is the number of lock stripes of the in-memory limiters: independently locked key
// maps (a power of two). 64 keeps lock contention negligible on machines with far fewer cores
// than stripes.
const numStripes = 64

// maxStackKey is the key length up to which Allow builds the key on the stack.
const maxStackKey = 128

// TokenBucket is the in-memory twin of RedisTokenBucket: the same decisions, from the same
// arithmetic (Decide, and so BucketPolicy.Refill), for the same sequence of requests. It is the
// reference model in tests and a local limiter (Source Local) in scenarios.
//
// Like the script, it writes the refilled state on every call, allowed or denied. Unlike Redis it
// never expires a key (it keeps 16 bytes plus the key and map overhead per key). Redis drops an
// idle key after the policy's TTL of real time; when requests' Now runs at wall-clock pace the
// bucket would have refilled to the burst by then anyway, so the two still agree (up to the last
// bit of a refill that ends exactly at the burst). With simulated or skewed time they can differ:
// a key Redis expired starts full there, and keeps its old state in the twin.
//
// It is safe for concurrent use; keys are spread over numStripes mutex-guarded maps, and a
// decision on an existing key allocates nothing. The zero value is not usable: use NewTokenBucket.
type TokenBucket struct {
	policy    BucketPolicy
	policyFor PolicyFunc
	seed      maphash.Seed
	stripes   [numStripes]bucketStripe
}

// bucketStripe is one lock and its keys, padded to a 64-byte cache line so that neighbouring
// stripes' locks do not bounce one line between cores.
type bucketStripe struct {
	mu sync.Mutex
	m  map[string]*BucketState
	_  [64 - 16]byte
}

var _ Limiter = (*TokenBucket)(nil)

// NewTokenBucket returns an empty in-memory token bucket deciding every key with policy p, or
// with the policy of WithPolicyFunc when that option is given. Timeout and NOSCRIPT options do
// not apply and are ignored.
func NewTokenBucket(p BucketPolicy, opts ...Option) (*TokenBucket, error) {
	if err := checkPolicy(p); err != nil {
		return nil, err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	b := &TokenBucket{policy: p, policyFor: cfg.policyFor, seed: maphash.MakeSeed()}
	for i := range b.stripes {
		b.stripes[i].m = make(map[string]*BucketState)
	}
	return b, nil
}

// Allow decides r at r.Now (time.Now when zero) with the request's policy. ctx is not used: the
// twin never blocks on anything but a stripe lock.
func (b *TokenBucket) Allow(_ context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	p, err := b.policyOf(r)
	if err != nil {
		return Decision{}, err
	}
	var buf [maxStackKey]byte
	key := AppendKey(buf[:0], r.Tenant, r.Endpoint)
	stripe := &b.stripes[maphash.Bytes(b.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	st := stripe.m[string(key)] // no allocation: the compiler looks up without a string copy
	if st == nil {
		st = new(BucketState)
		stripe.m[string(key)] = st
	}
	var d Decision
	*st, d = Decide(p, *st, nowMs, r.Cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, decidedAt(r, nowMs)
	return d, nil
}

// AllowAt decides a request of cost tokens (>= 0) on key at nowMs (Unix ms, > 0) with the
// constructor's policy. It is the pure, clock-free form of Allow: the key is used as given
// (build it with KeyFor), the policy function is not consulted, and Decision.At is nowMs.
func (b *TokenBucket) AllowAt(key string, nowMs, cost int64) Decision {
	return b.AllowPolicyAt(key, b.policy, nowMs, cost)
}

// AllowPolicyAt is AllowAt with an explicit policy p, which must pass BucketPolicy.Validate.
func (b *TokenBucket) AllowPolicyAt(key string, p BucketPolicy, nowMs, cost int64) Decision {
	stripe := &b.stripes[maphash.String(b.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	st := stripe.m[key]
	if st == nil {
		st = new(BucketState)
		stripe.m[key] = st
	}
	var d Decision
	*st, d = Decide(p, *st, nowMs, cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, time.UnixMilli(nowMs)
	return d
}

// State returns the stored state of key and whether the key exists.
func (b *TokenBucket) State(key string) (BucketState, bool) {
	stripe := &b.stripes[maphash.String(b.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	defer stripe.mu.Unlock()
	if st := stripe.m[key]; st != nil {
		return *st, true
	}
	return BucketState{}, false
}

// Len returns the number of keys the bucket holds.
func (b *TokenBucket) Len() int {
	n := 0
	for i := range b.stripes {
		stripe := &b.stripes[i]
		stripe.mu.Lock()
		n += len(stripe.m)
		stripe.mu.Unlock()
	}
	return n
}

// policyOf returns r's policy: the constructor's, or the policy function's after a check.
func (b *TokenBucket) policyOf(r Request) (BucketPolicy, error) {
	if b.policyFor == nil {
		return b.policy, nil
	}
	return checkedPolicy(b.policyFor(r.Tenant, r.Endpoint), b.policy, r)
}

// checkedPolicy returns p if it is known good (equal to the constructor's checked policy) or
// passes checkPolicy; the check allocates only when it fails.
func checkedPolicy(p, known BucketPolicy, r Request) (BucketPolicy, error) {
	if p == known {
		return p, nil
	}
	if err := checkPolicy(p); err != nil {
		return BucketPolicy{}, fmt.Errorf("tenant %q endpoint %q: policy function: %w", r.Tenant, r.Endpoint, err)
	}
	return p, nil
}
