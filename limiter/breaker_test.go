package limiter_test

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ratelab/limiter"
)

// fakeClock is a manually advanced clock for WithBreakerClock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(t0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// breakerStep is one operation on a breaker and the state it must leave behind.
type breakerStep struct {
	op        string        // "allow", "success", "failure" or "advance"
	node      string        // default "a"
	d         time.Duration // for "advance"
	wantAllow bool          // for "allow"
	wantState string        // the node's state after the step
}

func TestBreakerStateMachine(t *testing.T) {
	t.Parallel()
	const (
		closed   = limiter.BreakerClosed
		open     = limiter.BreakerOpen
		halfOpen = limiter.BreakerHalfOpen
	)
	fail := breakerStep{op: "failure", wantState: closed}
	failOpen := breakerStep{op: "failure", wantState: open}
	opened := []breakerStep{fail, fail, failOpen} // threshold 3
	allow := func(want bool, state string) breakerStep {
		return breakerStep{op: "allow", wantAllow: want, wantState: state}
	}
	advance := func(d time.Duration, state string) breakerStep {
		return breakerStep{op: "advance", d: d, wantState: state}
	}
	probing := append(slices.Clone(opened), advance(time.Second, open), allow(true, halfOpen))
	tests := []struct {
		name  string
		steps []breakerStep
	}{
		{"unknown node is closed", []breakerStep{allow(true, closed), {op: "success", wantState: closed}}},
		{"threshold consecutive failures open", append(slices.Clone(opened), allow(false, open), allow(false, open))},
		{"success resets the count", []breakerStep{fail, fail, {op: "success", wantState: closed}, fail, fail, allow(true, closed), failOpen}},
		{"open until the cooldown has passed", append(slices.Clone(opened),
			advance(999*time.Millisecond, open), allow(false, open), advance(time.Millisecond, open), allow(true, halfOpen))},
		{"half-open lets one probe through", append(slices.Clone(probing), allow(false, halfOpen), allow(false, halfOpen))},
		{"probe success closes", append(slices.Clone(probing),
			breakerStep{op: "success", wantState: closed}, allow(true, closed), allow(true, closed), fail, fail, failOpen)},
		{"failed probe re-opens for another cooldown", append(slices.Clone(probing), failOpen,
			allow(false, open), advance(999*time.Millisecond, open), allow(false, open), advance(time.Millisecond, open), allow(true, halfOpen))},
		{"failure while open does not extend the cooldown", append(slices.Clone(opened),
			advance(500*time.Millisecond, open), failOpen, advance(500*time.Millisecond, open), allow(true, halfOpen))},
		{"lost probe: another after one cooldown", append(slices.Clone(probing),
			advance(999*time.Millisecond, halfOpen), allow(false, halfOpen), advance(time.Millisecond, halfOpen), allow(true, halfOpen), allow(false, halfOpen))},
		{"success while open closes", append(slices.Clone(opened), breakerStep{op: "success", wantState: closed}, allow(true, closed))},
		{"nodes are independent", append(slices.Clone(opened),
			breakerStep{op: "allow", node: "b", wantAllow: true, wantState: closed},
			breakerStep{op: "failure", node: "b", wantState: closed},
			breakerStep{op: "failure", node: "b", wantState: closed},
			allow(false, open))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			b := limiter.NewBreaker(3, time.Second, limiter.WithBreakerClock(clock.Now))
			for i, st := range tt.steps {
				node := st.node
				if node == "" {
					node = "a"
				}
				switch st.op {
				case "allow":
					if have := b.Allow(node); have != st.wantAllow {
						t.Fatalf("step %d: Allow(%q) = %v, want %v", i, node, have, st.wantAllow)
					}
				case "success":
					b.Success(node)
				case "failure":
					b.Failure(node)
				case "advance":
					clock.Advance(st.d)
				default:
					t.Fatalf("step %d: unknown op %q", i, st.op)
				}
				if have := b.State(node); have != st.wantState {
					t.Fatalf("step %d (%s %s): State(%q) = %q, want %q", i, st.op, node, node, have, st.wantState)
				}
			}
		})
	}
}

func TestBreakerDefaults(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	b := limiter.NewBreaker(0, 0, limiter.WithBreakerClock(clock.Now))
	if b.Threshold() != limiter.DefaultBreakerThreshold || b.Cooldown() != limiter.DefaultBreakerCooldown {
		t.Fatalf("NewBreaker(0, 0): threshold %d, cooldown %v; want %d, %v",
			b.Threshold(), b.Cooldown(), limiter.DefaultBreakerThreshold, limiter.DefaultBreakerCooldown)
	}
	for i := 1; i <= limiter.DefaultBreakerThreshold; i++ {
		b.Failure("n")
		want := limiter.BreakerClosed
		if i == limiter.DefaultBreakerThreshold {
			want = limiter.BreakerOpen
		}
		if have := b.State("n"); have != want {
			t.Fatalf("after %d failures: State = %q, want %q", i, have, want)
		}
	}
	clock.Advance(limiter.DefaultBreakerCooldown - time.Nanosecond)
	if b.Allow("n") {
		t.Fatal("Allow 1 ns before the default cooldown ends = true, want false")
	}
	clock.Advance(time.Nanosecond)
	if !b.Allow("n") {
		t.Fatal("Allow when the default cooldown ends = false, want true (the probe)")
	}
}

func TestBreakerPanicsOnBadArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have func()
	}{
		{"negative threshold", func() { limiter.NewBreaker(-1, time.Second) }},
		{"negative cooldown", func() { limiter.NewBreaker(1, -time.Second) }},
		{"nil clock", func() { limiter.NewBreaker(1, time.Second, limiter.WithBreakerClock(nil)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tt.name)
				}
			}()
			tt.have()
		})
	}
}

func TestBreakerOnStateChange(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var have []string
	b := limiter.NewBreaker(1, time.Second, limiter.WithBreakerClock(clock.Now),
		limiter.WithOnStateChange(func(node, from, to string) { have = append(have, node+":"+from+">"+to) }))
	b.Failure("a") // closed > open
	b.Failure("a") // late failure: no change
	clock.Advance(time.Second)
	b.Allow("a")   // open > half-open
	b.Failure("a") // half-open > open
	clock.Advance(time.Second)
	b.Allow("a")   // open > half-open
	b.Success("a") // half-open > closed
	b.Success("a") // no change
	want := []string{"a:closed>open", "a:open>half-open", "a:half-open>open", "a:open>half-open", "a:half-open>closed"}
	if !slices.Equal(have, want) {
		t.Errorf("state changes:\nhave %q\nwant %q", have, want)
	}
}

// TestBreakerOneProbeUnderContention: however many callers race for a half-open breaker, exactly
// one gets the probe.
func TestBreakerOneProbeUnderContention(t *testing.T) {
	t.Parallel()
	const callers = 16
	clock := newFakeClock()
	b := limiter.NewBreaker(1, time.Second, limiter.WithBreakerClock(clock.Now))
	for round := range 50 {
		b.Failure("n")
		if b.State("n") != limiter.BreakerOpen {
			t.Fatalf("round %d: State = %q after a failure with threshold 1, want open", round, b.State("n"))
		}
		clock.Advance(time.Second)
		var granted atomic.Int64
		var start, done sync.WaitGroup
		start.Add(1)
		for range callers {
			done.Go(func() {
				start.Wait()
				if b.Allow("n") {
					granted.Add(1)
				}
			})
		}
		start.Done()
		done.Wait()
		if n := granted.Load(); n != 1 {
			t.Fatalf("round %d: %d of %d concurrent callers got the half-open probe, want exactly 1", round, n, callers)
		}
		b.Success("n")
	}
}

// TestBreakerConcurrentNodes creates many nodes at once (copy-on-write of the node map): no
// node's failure may be lost.
func TestBreakerConcurrentNodes(t *testing.T) {
	t.Parallel()
	const nodes = 64
	b := limiter.NewBreaker(2, time.Second)
	var wg sync.WaitGroup
	for i := range nodes {
		for range 2 {
			wg.Go(func() { b.Failure("node-" + strconv.Itoa(i)) })
		}
	}
	wg.Wait()
	for i := range nodes {
		if s := b.State("node-" + strconv.Itoa(i)); s != limiter.BreakerOpen {
			t.Errorf("node-%d: State = %q after 2 concurrent failures with threshold 2, want open", i, s)
		}
	}
}

// TestBreakerRace mixes every operation on a few nodes from many goroutines, for the race
// detector; afterwards every node must be in a valid state, and a success closes it.
func TestBreakerRace(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	b := limiter.NewBreaker(3, time.Millisecond, limiter.WithBreakerClock(clock.Now))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				node := fmt.Sprintf("n%d", (g+i)%4)
				switch (g*7 + i) % 5 {
				case 0, 1:
					b.Allow(node)
				case 2:
					b.Failure(node)
				case 3:
					b.Success(node)
				case 4:
					clock.Advance(100 * time.Microsecond)
					_ = b.State(node)
				}
			}
		})
	}
	wg.Wait()
	for i := range 4 {
		node := fmt.Sprintf("n%d", i)
		if s := b.State(node); s != limiter.BreakerClosed && s != limiter.BreakerOpen && s != limiter.BreakerHalfOpen {
			t.Errorf("%s: State = %q", node, s)
		}
		b.Success(node)
		if s := b.State(node); s != limiter.BreakerClosed || !b.Allow(node) {
			t.Errorf("%s: after Success State = %q, want closed and allowing", node, s)
		}
	}
}

func BenchmarkBreakerClosed(b *testing.B) {
	br := limiter.NewBreaker(0, 0)
	br.Failure("n") // the node exists, closed with one failure; Success resets it once
	br.Success("n")
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if br.Allow("n") {
				br.Success("n")
			}
		}
	})
	reportRate(b, start)
}

// A breaker opens after threshold consecutive failures, lets one probe through after the
// cooldown, and closes when the probe succeeds.
func ExampleBreaker() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b := limiter.NewBreaker(2, time.Second, limiter.WithBreakerClock(func() time.Time { return now }))
	b.Failure("node-1")
	fmt.Println(b.State("node-1"), b.Allow("node-1"))
	b.Failure("node-1")
	fmt.Println(b.State("node-1"), b.Allow("node-1"))
	now = now.Add(time.Second)
	fmt.Println(b.Allow("node-1"), b.State("node-1"), b.Allow("node-1"))
	b.Success("node-1")
	fmt.Println(b.State("node-1"), b.Allow("node-1"))
	// Output:
	// closed true
	// open false
	// true half-open false
	// closed true
}
