package check

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"ratelab/limiter"
	"ratelab/workload"
)

// osObs is one observation fed to the checker, with the verdict it must get.
type osObs struct {
	ms      int64
	cost    int64
	allowed bool
	src     limiter.Source
	want    Verdict
}

func TestOverspendEnvelope(t *testing.T) {
	t.Parallel()
	const c = limiter.Central
	tests := []struct {
		name   string
		policy limiter.BucketPolicy
		obs    []osObs
		want   Totals
	}{
		{
			name:   "a full burst conforms",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 3},
			obs:    []osObs{{1000, 1, true, c, Conforming}, {1000, 1, true, c, Conforming}, {1000, 1, true, c, Conforming}},
			want:   Totals{Allowed: 3},
		},
		{
			name:   "burst+1 overspends",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 3},
			obs: []osObs{{1000, 1, true, c, Conforming}, {1000, 1, true, c, Conforming}, {1000, 1, true, c, Conforming},
				{1000, 1, true, c, Overspend}},
			want: Totals{Allowed: 4, OverspendRequests: 1, OverspendTokens: 1, ByCause: map[string]int64{"central": 1}},
		},
		{
			// 10 tokens/s = 0.01/ms: 50 ms refill half a token, 100 ms a whole one.
			name:   "refill at the policy rate",
			policy: limiter.BucketPolicy{Rate: 10, Burst: 2},
			obs: []osObs{{1000, 1, true, c, Conforming}, {1000, 1, true, c, Conforming},
				{1050, 1, true, c, Overspend}, {1100, 1, true, c, Conforming}, {1100, 1, true, c, Overspend}},
			want: Totals{Allowed: 5, OverspendRequests: 2, OverspendTokens: 2, ByCause: map[string]int64{"central": 2}},
		},
		{
			// If the overspending request were debited the bucket would be at -1 and the request a
			// second later (one token refilled) would overspend too.
			name:   "overspend is not debited",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 1},
			obs:    []osObs{{1000, 1, true, c, Conforming}, {1000, 1, true, c, Overspend}, {2000, 1, true, c, Conforming}},
			want:   Totals{Allowed: 3, OverspendRequests: 1, OverspendTokens: 1, ByCause: map[string]int64{"central": 1}},
		},
		{
			name:   "refill stops at the burst",
			policy: limiter.BucketPolicy{Rate: 100, Burst: 2},
			obs: []osObs{{1000, 1, true, c, Conforming}, {1000, 1, true, c, Conforming},
				{900_000, 1, true, c, Conforming}, {900_000, 1, true, c, Conforming}, {900_000, 1, true, c, Overspend}},
			want: Totals{Allowed: 5, OverspendRequests: 1, OverspendTokens: 1, ByCause: map[string]int64{"central": 1}},
		},
		{
			name:   "cost above one",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 5},
			// At 4000 N holds 3 tokens, but the allowed stream as it happened (the overspent 3
			// debited) holds none: the limiter refuses for want of the tokens it overspent,
			// counted once, as the overspend. By 7000 both hold 3: that refusal is false.
			obs: []osObs{{1000, 3, true, c, Conforming}, {1000, 3, true, c, Overspend}, {1000, 2, true, c, Conforming},
				{1000, 0, true, c, Conforming}, {3000, 3, false, c, Denied}, {4000, 3, false, c, Denied},
				{7000, 3, false, c, FalseDeny}},
			want: Totals{Allowed: 4, Denied: 3, OverspendRequests: 1, OverspendTokens: 3, FalseDenies: 1,
				ByCause: map[string]int64{"central": 1}},
		},
		{
			// The false deny leaves the token in the bucket, so the next request conforms; the
			// second token stays unspent, so the denial was wrong and stays counted.
			name:   "a false deny is not debited",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 2},
			obs:    []osObs{{1000, 1, false, c, FalseDeny}, {1000, 1, true, c, Conforming}, {1500, 1, true, c, Conforming}},
			want:   Totals{Allowed: 2, Denied: 1, FalseDenies: 1},
		},
		{
			// The limiter gave the last token to the request the envelope sees second: the
			// denial seen first is explained by it and withdrawn.
			name:   "a denial explained by a concurrent allowed request is withdrawn",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 1},
			obs:    []osObs{{1000, 1, false, c, FalseDeny}, {1000, 1, true, c, Conforming}, {1000, 1, false, c, Denied}},
			want:   Totals{Allowed: 1, Denied: 2, Withdrawn: 1},
		},
		{
			// Past the reorder window (200 ms) a denial can no longer be explained: at 1300 the
			// envelope refilled, but the denial at 1000 stays false.
			name:   "a false deny is final after the reorder window",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 1},
			obs:    []osObs{{1000, 1, false, c, FalseDeny}, {2300, 1, true, c, Conforming}, {2300, 1, false, c, Denied}},
			want:   Totals{Allowed: 1, Denied: 2, FalseDenies: 1},
		},
		{
			// At 3000 the clock is behind the key's 5000: no refill and the key's clock stays at
			// 5000, so at 5500 only half a token is back. Had it moved back to 3000, 5500 would
			// see a full bucket.
			name:   "time going backwards refills nothing",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 1},
			obs: []osObs{{5000, 1, true, c, Conforming}, {3000, 1, true, c, Overspend}, {3000, 1, false, c, Denied},
				{5500, 1, true, c, Overspend}, {6000, 1, true, c, Conforming}},
			want: Totals{Allowed: 4, Denied: 1, OverspendRequests: 2, OverspendTokens: 2, ByCause: map[string]int64{"central": 2}},
		},
		{
			name:   "fractional rate accumulates across calls",
			policy: limiter.BucketPolicy{Rate: 3, Burst: 1}, // 0.003 tokens/ms
			obs: []osObs{{1000, 1, true, c, Conforming}, {1333, 1, true, c, Overspend}, // 0.999 tokens
				{1334, 1, true, c, Conforming}}, // 1.002 -> capped at 1
			want: Totals{Allowed: 3, OverspendRequests: 1, OverspendTokens: 1, ByCause: map[string]int64{"central": 1}},
		},
		{
			name:   "overspend is attributed to the decision's source",
			policy: limiter.BucketPolicy{Rate: 1, Burst: 1},
			obs: []osObs{{1000, 1, true, limiter.FailOpen, Conforming}, {1000, 1, true, limiter.FailOpen, Overspend},
				{1000, 2, true, limiter.Lease, Overspend}, {1000, 1, true, limiter.Source(200), Overspend},
				{1000, 1, false, limiter.FailClosed, Denied}},
			want: Totals{Allowed: 4, Denied: 1, OverspendRequests: 3, OverspendTokens: 4,
				ByCause: map[string]int64{"fail-open": 1, "lease": 1, "unknown": 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Two keys with the same policy: key 1 gets the sequence, key 0 stays untouched, so a
			// checker that mixed keys up would see a full bucket on the wrong one.
			ch := NewBucket(2, func(int) limiter.BucketPolicy { return tt.policy })
			for i, o := range tt.obs {
				if have := ch.Observe(1, o.ms, o.cost, o.allowed, o.src); have != o.want {
					t.Fatalf("observation %d %+v: verdict %v, want %v", i, o, have, o.want)
				}
			}
			if have := ch.Totals(); !osTotalsEqual(have, tt.want) {
				t.Fatalf("totals = %+v, want %+v", have, tt.want)
			}
			if have := ch.Observe(0, 1000, tt.policy.Burst, true, limiter.Central); have != Conforming {
				t.Fatalf("untouched key 0 with a full burst: %v, want conforming", have)
			}
		})
	}
}

func osTotalsEqual(a, b Totals) bool {
	if a.Allowed != b.Allowed || a.Denied != b.Denied || a.OverspendRequests != b.OverspendRequests ||
		a.FalseDenies != b.FalseDenies || a.OverspendTokens != b.OverspendTokens || len(a.ByCause) != len(b.ByCause) {
		return false
	}
	for k, v := range b.ByCause {
		if a.ByCause[k] != v {
			return false
		}
	}
	return true
}

func TestVerdictString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		have Verdict
		want string
	}{{Conforming, "conforming"}, {Overspend, "overspend"}, {FalseDeny, "false-deny"}, {Denied, "denied"}, {9, "verdict(9)"}} {
		if tt.have.String() != tt.want {
			t.Errorf("Verdict(%d).String() = %q, want %q", uint8(tt.have), tt.have.String(), tt.want)
		}
	}
}

// osExactBucket is an exact per-key token bucket built from BucketPolicy.Refill, the same way the
// Lua script and the in-memory twin decide: refill, allow and debit if tokens >= cost.
type osExactBucket struct {
	policy func(int) limiter.BucketPolicy
	states []limiter.BucketState
}

// decide returns whether the exact bucket allows the request; leak lets it allow a request it
// would deny, without debiting (what a leaky limiter does), and reports whether that happened.
func (b *osExactBucket) decide(key int, ms, cost int64, leak bool) (allowed, leaked bool) {
	st := b.policy(key).Refill(b.states[key], ms)
	defer func() { b.states[key] = st }()
	if st.Tokens >= float64(cost) {
		st.Tokens -= float64(cost)
		return true, false
	}
	return leak, leak
}

// osPolicies gives keys three policy classes, among them a fractional rate.
func osPolicies(key int) limiter.BucketPolicy {
	switch key % 3 {
	case 0:
		return limiter.BucketPolicy{Rate: 100, Burst: 20}
	case 1:
		return limiter.BucketPolicy{Rate: 7.5, Burst: 3}
	default:
		return limiter.BucketPolicy{Rate: 1000, Burst: 200}
	}
}

// osTraffic is a seeded stream of (key, ms, cost): Zipf-hot keys, time advancing 0..2 ms per
// request from a realistic Unix-ms epoch, costs 1..3. Hot keys are driven well past their rate.
type osTraffic struct {
	keys workload.KeyDist
	r    *rand.Rand
	ms   int64
}

func newOSTraffic(t testing.TB, keys int, seed uint64) *osTraffic {
	z, err := workload.NewZipf(uint64(keys), 1.1)
	if err != nil {
		t.Fatal(err)
	}
	return &osTraffic{keys: z, r: rand.New(rand.NewPCG(seed, 1)), ms: 1_767_000_000_000}
}

func (g *osTraffic) next() (key int, ms, cost int64) {
	g.ms += g.r.Int64N(3)
	return int(g.keys.Draw(g.r)), g.ms, 1 + g.r.Int64N(3)
}

// TestOverspendExactLimiterIsClean drives an exact limiter through the checker in its own order:
// the envelope and the limiter share BucketPolicy.Refill, so there must be no overspend and no
// false deny — while the load is high enough that both allows and denies are common.
func TestOverspendExactLimiterIsClean(t *testing.T) {
	t.Parallel()
	const keys, requests = 300, 200_000
	lim := &osExactBucket{policy: osPolicies, states: make([]limiter.BucketState, keys)}
	ch := NewBucket(keys, osPolicies)
	g := newOSTraffic(t, keys, 1)
	for range requests {
		key, ms, cost := g.next()
		allowed, _ := lim.decide(key, ms, cost, false)
		v := ch.Observe(key, ms, cost, allowed, limiter.Central)
		if want := map[bool]Verdict{true: Conforming, false: Denied}[allowed]; v != want {
			t.Fatalf("key %d at %d cost %d allowed=%v: verdict %v, want %v", key, ms, cost, allowed, v, want)
		}
	}
	tot := ch.Totals()
	if tot.OverspendRequests != 0 || tot.OverspendTokens != 0 || tot.FalseDenies != 0 || len(tot.ByCause) != 0 ||
		tot.PossibleOverspendRequests != 0 || tot.PossibleFalseDenies != 0 || tot.BurstExcess != 0 || tot.WorstKey != -1 {
		t.Fatalf("exact limiter: %+v, want zero overspend, zero false denies and no burst excess", tot)
	}
	if tot.Allowed+tot.Denied != requests || tot.Allowed < requests/10 || tot.Denied < requests/10 {
		t.Fatalf("allowed %d + denied %d: want %d in all, at least 10%% of each", tot.Allowed, tot.Denied, requests)
	}
}

// TestOverspendLeakyLimiterExcess: a limiter that lets through up to 10% more than the exact
// bucket (it allows a request it should deny while its excess is below 10% of its conforming
// allows, without debiting, and labels those decisions fail-open). The checker must count exactly
// the excess: same requests, same tokens, all attributed to fail-open.
func TestOverspendLeakyLimiterExcess(t *testing.T) {
	t.Parallel()
	const keys, requests = 300, 200_000
	lim := &osExactBucket{policy: osPolicies, states: make([]limiter.BucketState, keys)}
	ch := NewBucket(keys, osPolicies)
	g := newOSTraffic(t, keys, 2)
	var conforming, excess, excessTokens int64
	for range requests {
		key, ms, cost := g.next()
		allowed, leaked := lim.decide(key, ms, cost, excess*10 < conforming)
		src := limiter.Central
		switch {
		case leaked:
			excess++
			excessTokens += cost
			src = limiter.FailOpen
		case allowed:
			conforming++
		}
		ch.Observe(key, ms, cost, allowed, src)
	}
	tot := ch.Totals()
	if tot.OverspendRequests != excess || tot.OverspendTokens != excessTokens || tot.ByCause["fail-open"] != excess ||
		len(tot.ByCause) != 1 || tot.FalseDenies != 0 || tot.PossibleOverspendRequests != excess || !(tot.BurstExcess > 0) {
		t.Fatalf("totals %+v; want overspend = excess = %d requests, %d tokens, all fail-open, no false denies",
			tot, excess, excessTokens)
	}
	// The leak rule keeps excess within one request of conforming/10.
	if d := excess*10 - conforming; d < -10 || d > 10 || tot.Denied < requests/10 {
		t.Fatalf("excess %d vs conforming %d with %d denies; the test needs a 10%% leak under real pressure",
			excess, conforming, tot.Denied)
	}
}

// TestOverspendConcurrent: 8 goroutines observe disjoint key sets (each key's order is fixed by
// its goroutine) while a 9th reads Totals. The result must equal a sequential replay exactly —
// only per-key order matters. Then all goroutines hammer the same 4 keys: counts must still add up.
func TestOverspendConcurrent(t *testing.T) {
	t.Parallel()
	const keys, workers, perWorker = 512, 8, 20_000
	type ev struct {
		key       int
		ms, cost  int64
		allowed   bool
		overspent bool
	}
	// Each worker's events: keys with key%workers == w, allowed at random so that both
	// overspend and false denies occur.
	evs := make([][]ev, workers)
	for w := range evs {
		r := rand.New(rand.NewPCG(uint64(w), 99))
		ms := int64(1_767_000_000_000)
		for range perWorker {
			ms += r.Int64N(2)
			key := w + workers*r.IntN(keys/workers)
			evs[w] = append(evs[w], ev{key: key, ms: ms, cost: 1 + r.Int64N(2), allowed: r.IntN(4) != 0})
		}
	}
	seq := NewBucket(keys, osPolicies)
	for _, list := range evs {
		for _, e := range list {
			seq.Observe(e.key, e.ms, e.cost, e.allowed, limiter.Lease)
		}
	}
	want := seq.Totals()
	if want.OverspendRequests == 0 || want.FalseDenies == 0 {
		t.Fatalf("sequential replay %+v: the events should produce both overspend and false denies", want)
	}

	par := NewBucket(keys, osPolicies)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var reads atomic.Int64
	wg.Go(func() { // a reader racing the writers
		for {
			select {
			case <-stop:
				return
			default:
				if tot := par.Totals(); tot.Allowed+tot.Denied > workers*perWorker {
					t.Errorf("mid-run totals %+v exceed the events", tot)
				}
				reads.Add(1)
				runtime.Gosched()
			}
		}
	})
	var writers sync.WaitGroup
	for w := range workers {
		writers.Go(func() {
			for _, e := range evs[w] {
				par.Observe(e.key, e.ms, e.cost, e.allowed, limiter.Lease)
			}
		})
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	if have := par.Totals(); !osTotalsEqual(have, want) {
		t.Fatalf("concurrent totals %+v, want the sequential %+v", have, want)
	}

	shared := NewBucket(4, osPolicies)
	for w := range workers {
		writers.Go(func() {
			for i := range 5000 {
				shared.Observe(i%4, 1_767_000_000_000+int64(i), 1, (i+w)%2 == 0, limiter.Central)
			}
		})
	}
	writers.Wait()
	if tot := shared.Totals(); tot.Allowed+tot.Denied != workers*5000 || tot.Allowed != workers*2500 {
		t.Fatalf("shared keys: %+v, want %d allowed of %d", tot, workers*2500, workers*5000)
	}
}

// TestOverspendPolicyCache: the policy func runs once per key, each key keeps its own class, and
// past 65,534 distinct policies keys fall back to calling the func whenever their clock moves —
// still judged correctly.
func TestOverspendPolicyCache(t *testing.T) {
	t.Parallel()
	const keys = overspendMaxClasses + 1000
	calls := make([]atomic.Int32, keys)
	// Key k has burst k+1: every key is its own class. 1000 tokens/s refill any of them within
	// the 1,000 s between rounds.
	ch := NewBucket(keys, func(k int) limiter.BucketPolicy {
		calls[k].Add(1)
		return limiter.BucketPolicy{Rate: 1000, Burst: int64(k) + 1}
	})
	// Fill the table: the first 65,534 keys take every class.
	for k := range overspendMaxClasses {
		ch.Observe(k, 1000, 0, true, limiter.Central)
	}
	for _, k := range []int{0, 1, 7, 1000, overspendMaxClasses - 1, overspendMaxClasses, keys - 1} {
		burst := int64(k) + 1
		for i := range 3 {
			// All of the burst in one request conforms; one token more overspends.
			ms := 2000 + int64(i)*1_000_000
			if have := ch.Observe(k, ms, burst, true, limiter.Central); have != Conforming {
				t.Fatalf("key %d round %d: cost = burst %d: %v, want conforming", k, i, burst, have)
			}
			if have := ch.Observe(k, ms, 1, true, limiter.Central); have != Overspend {
				t.Fatalf("key %d round %d: burst+1: %v, want overspend", k, i, have)
			}
		}
	}
	for _, k := range []int{0, 1, 7, 1000, overspendMaxClasses - 1} {
		if n := calls[k].Load(); n != 1 {
			t.Errorf("key %d: policy called %d times, want 1 (cached)", k, n)
		}
	}
	for _, k := range []int{overspendMaxClasses, keys - 1} {
		if n := calls[k].Load(); n != 3 {
			t.Errorf("key %d (beyond the table): policy called %d times, want 3 (once per observation that moves its clock)", k, n)
		}
	}

	// Keys sharing a policy share a class: 1000 keys, two policies, two table entries.
	same := NewBucket(1000, func(k int) limiter.BucketPolicy {
		return limiter.BucketPolicy{Rate: 10, Burst: int64(1 + k%2)}
	})
	for k := range 1000 {
		same.Observe(k, 1000, 1, true, limiter.Central)
	}
	if same.nPol != 2 {
		t.Fatalf("2 distinct policies over 1000 keys: %d table entries, want 2", same.nPol)
	}
}

func TestOverspendMisuse(t *testing.T) {
	t.Parallel()
	ok := func(int) limiter.BucketPolicy { return limiter.BucketPolicy{Rate: 1, Burst: 1} }
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"negative keys", func() { NewBucket(-1, ok) }, "keys -1"},
		{"nil policy", func() { NewBucket(1, nil) }, "policy is nil"},
		{"key too big", func() { NewBucket(3, ok).Observe(3, 1000, 1, true, limiter.Central) }, "key 3: out of range [0, 3)"},
		{"negative key", func() { NewBucket(3, ok).Observe(-1, 1000, 1, true, limiter.Central) }, "key -1: out of range"},
		{"negative cost", func() { NewBucket(3, ok).Observe(1, 1000, -2, true, limiter.Central) }, "cost -2 on key 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %q, want one containing %q", msg, tt.want)
				}
			}()
			tt.call()
		})
	}
	if NewBucket(0, ok).Totals().ByCause == nil {
		t.Fatal("Totals().ByCause is nil, want an empty map")
	}
}

// osMillionKeysBytes builds a 1,000,000-key checker, observes every key once (so every key's
// class is resolved) and returns the bytes allocated per key.
func osMillionKeysBytes() float64 {
	const keys = 1_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ch := NewBucket(keys, osPolicies)
	for k := range keys {
		ch.Observe(k, 1_767_000_000_000, 1, true, limiter.Central)
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ch)
	return float64(after.TotalAlloc-before.TotalAlloc) / keys
}

// TestOverspendMemoryPerKey: a 72-byte record per key (clock, the N, D and E buckets, E's deepest
// deficit, N's and D's provisional false denies, fail-policy debt, policy class), plus ~100 KB
// fixed (stripes, policy table and map: 0.1 bytes/key at this size).
func TestOverspendMemoryPerKey(t *testing.T) {
	// Not parallel: TotalAlloc counts the whole process, so this runs while no parallel test does.
	for name, size := range map[string]uintptr{"stripe": unsafe.Sizeof(stripe{}), "tierStripe": unsafe.Sizeof(tierStripe{})} {
		if size%64 != 0 {
			t.Errorf("%s is %d bytes, want a multiple of 64 (one stripe per cache line set)", name, size)
		}
	}
	if size := unsafe.Sizeof(bucketKey{}); size != 72 {
		t.Errorf("bucketKey is %d bytes, want 72", size)
	}
	perKey := osMillionKeysBytes()
	t.Logf("1,000,000 keys: %.2f bytes/key", perKey)
	if perKey < 72 || perKey > 75 {
		t.Fatalf("1,000,000 keys: %.2f bytes/key, want 72..75 (a 72-byte record + fixed overhead)", perKey)
	}
}

func BenchmarkOverspendMemory(b *testing.B) {
	var perKey float64
	for b.Loop() {
		perKey = osMillionKeysBytes()
	}
	b.ReportMetric(perKey, "bytes/key")
}

// osWarmChecker returns a checker over keys with every key observed once, so the benchmarks
// measure the steady state (class resolved) rather than first sightings.
func osWarmChecker(keys int) *Bucket {
	ch := NewBucket(keys, osPolicies)
	for k := range keys {
		ch.Observe(k, 1_767_000_000_000, 0, true, limiter.Central)
	}
	return ch
}

// BenchmarkOverspendObserve: one goroutine, Zipf-hot key order precomputed so the loop measures
// Observe alone. With 1,000 keys the states stay in cache; with 1,000,000 (72 MB) most
// observations of cold keys miss it.
func BenchmarkOverspendObserve(b *testing.B) {
	for _, keys := range []int{1000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			ch := osWarmChecker(keys)
			g := newOSTraffic(b, keys, 3)
			const n = 1 << 16
			order := make([]int, n)
			for i := range order {
				order[i], _, _ = g.next()
			}
			ms := int64(1_767_000_000_000)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ch.Observe(order[i&(n-1)], ms+int64(i>>10), 1, i&1 == 0, limiter.Central)
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// BenchmarkOverspendObserveParallel: all Ps observing at once over uniformly random keys, as the
// engine's workers do.
func BenchmarkOverspendObserveParallel(b *testing.B) {
	for _, keys := range []int{1000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			ch := osWarmChecker(keys)
			var seed atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(seed.Add(1), 7))
				ms := int64(1_767_000_000_000)
				for i := 0; pb.Next(); i++ {
					ch.Observe(r.IntN(keys), ms+int64(i>>10), 1, i&1 == 0, limiter.Central)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

func TestOverspendUnknownOutcomes(t *testing.T) {
	t.Parallel()
	p := limiter.BucketPolicy{Rate: 1, Burst: 2} // 0.001 tokens/ms
	tests := []struct {
		name  string
		steps func(c *Bucket) []Verdict
		want  []Verdict
	}{
		{
			// The timed-out request did run: the limiter then denies the third; not a false deny.
			name: "applied unknown is no false deny",
			steps: func(c *Bucket) []Verdict {
				a := c.Observe(0, 1000, 1, true, limiter.Central)
				c.ObserveUnknown(0, 1000, 1, true)
				return []Verdict{a, c.Observe(0, 1000, 1, false, limiter.Central)}
			},
			want: []Verdict{Conforming, Denied},
		},
		{
			// The timed-out request never ran: the limiter still had a token; not overspend.
			name: "unapplied unknown is not confirmed overspend",
			steps: func(c *Bucket) []Verdict {
				a := c.Observe(0, 1000, 1, true, limiter.Central)
				c.ObserveUnknown(0, 1000, 1, true)
				b := c.Observe(0, 1000, 1, true, limiter.Central)
				return []Verdict{a, b, c.Observe(0, 1000, 1, true, limiter.Central)}
			},
			want: []Verdict{Conforming, Conforming, Overspend},
		},
		{
			// Once the bucket is full again an unknown outcome makes no difference.
			name: "an unknown outcome is forgotten once the bucket is full",
			steps: func(c *Bucket) []Verdict {
				c.ObserveUnknown(0, 1000, 1, true)
				a := c.Observe(0, 10000, 2, true, limiter.Central) // full again at 2 tokens
				return []Verdict{a, c.Observe(0, 10000, 1, true, limiter.Central)}
			},
			want: []Verdict{Conforming, Overspend},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewBucket(1, func(int) limiter.BucketPolicy { return p })
			have := tt.steps(c)
			if fmt.Sprint(have) != fmt.Sprint(tt.want) {
				t.Errorf("verdicts = %v, want %v", have, tt.want)
			}
			if got := c.Totals().Unknown; got == 0 {
				t.Errorf("Totals().Unknown = 0, want the unknown outcomes counted")
			}
		})
	}
}

func TestOverspendAfterFailOpenIsAttributedToIt(t *testing.T) {
	t.Parallel()
	c := NewBucket(1, func(int) limiter.BucketPolicy { return limiter.BucketPolicy{Rate: 1, Burst: 2} })
	// The store is down: two requests fail open (the envelope pays), the store never counted them.
	c.Observe(0, 1000, 1, true, limiter.FailOpen)
	c.Observe(0, 1000, 1, true, limiter.FailOpen)
	// Back up, the store still has both tokens and allows two more: overspend, caused by fail-open.
	c.Observe(0, 1001, 1, true, limiter.Central)
	c.Observe(0, 1001, 1, true, limiter.Central)
	// Debt paid: a third is the central limiter's own overspend.
	c.Observe(0, 1001, 1, true, limiter.Central)
	got := c.Totals()
	if got.OverspendRequests != 3 || got.ByCause["fail-open"] != 2 || got.ByCause["central"] != 1 {
		t.Errorf("totals %+v: want 3 overspend, 2 attributed to fail-open and 1 to central", got)
	}
}
