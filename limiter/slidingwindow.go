package limiter

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"
)

// SlidingWindowPolicy allows about Limit cost units in any span of Window, estimated from two
// fixed-window counters: the current window's count plus the previous window's count weighted
// by the share of it the sliding window still covers. The estimate assumes the previous window's
// traffic was spread evenly; when it was not, up to Limit units more (or fewer) can pass in a
// span of Window than an exact sliding log would allow.
type SlidingWindowPolicy struct {
	// Window is the window length, a whole number of milliseconds >= 1 ms.
	Window time.Duration
	// Limit is the number of cost units allowed per window, >= 1.
	Limit int64
}

// Validate reports a policy that no sliding-window counter can implement.
func (p SlidingWindowPolicy) Validate() error {
	if err := checkWindow(p.Window); err != nil {
		return err
	}
	if p.Limit < 1 || p.Limit > 1<<53 {
		return fmt.Errorf("limit %d: must be 1..2^53 cost units per window", p.Limit)
	}
	return nil
}

// TTL is the PEXPIRE of a window key: two windows (a window's count is read during the next one
// as the previous window) plus WindowKeySlack.
func (p SlidingWindowPolicy) TTL() time.Duration { return 2*p.Window + WindowKeySlack }

// SlidingWindowKey returns the counter key of a tenant's endpoint in window index (floor of Unix
// ms / window ms): KeyFor(tenant, endpoint) + ":sw:" + index.
func SlidingWindowKey(tenant, endpoint string, index int64) string {
	var buf [maxStackKey]byte
	b := AppendKey(buf[:0], tenant, endpoint)
	b = append(b, ":sw:"...)
	return string(strconv.AppendInt(b, index, 10))
}

// windowCounts is the twin's memory of one key's three newest windows written (index, count);
// a window it does not hold counts 0.
type windowCounts [3]struct{ idx, n int64 }

// get returns window idx's count.
func (c *windowCounts) get(idx int64) int64 {
	for i := range c {
		if c[i].idx == idx {
			return c[i].n
		}
	}
	return 0
}

// add adds n to window idx's count and returns the new count. A window older than the three held
// is not remembered (like a Redis key that expired).
func (c *windowCounts) add(idx, n int64) int64 {
	oldest := 0
	for i := range c {
		if c[i].idx == idx {
			c[i].n += n
			return c[i].n
		}
		if c[i].idx < c[oldest].idx {
			oldest = i
		}
	}
	if idx > c[oldest].idx {
		c[oldest].idx, c[oldest].n = idx, n
	}
	return n
}

// decideSlidingWindow makes one decision at nowMs for cost units, the arithmetic of
// lua/sliding_window.lua step by step (see the script for the formulas):
//
//	elapsed  = now - index*W;  estimate = prev*(1 - elapsed/W) + cur
//	allowed  = estimate + cost <= L      // then cur += cost and the estimate is taken again
//
// A denied request does not count. The explicit float64 conversions forbid fused multiply-adds,
// which Redis's Lua never does.
func decideSlidingWindow(p SlidingWindowPolicy, c *windowCounts, nowMs, cost int64) Decision {
	w := p.Window.Milliseconds()
	idx := nowMs / w
	cur, prev := c.get(idx), c.get(idx-1)
	elapsed := nowMs - idx*w
	toEnd := w - elapsed
	fw, L := float64(w), p.Limit
	weight := 1 - float64(elapsed)/fw
	est := float64(float64(prev)*weight) + float64(cur)
	var d Decision
	switch {
	case est+float64(cost) <= float64(L):
		cur = c.add(idx, cost)
		est = float64(float64(prev)*weight) + float64(cur)
		d.Allowed = true
	case cost > L:
		d.RetryAfter = RetryNever
	default:
		var retry int64
		if cur+cost <= L {
			retry = int64(math.Ceil(float64(fw*(1-float64(L-cur-cost)/float64(prev))) - float64(elapsed)))
		} else {
			retry = toEnd + max(0, int64(math.Ceil(fw*(1-float64(L-cost)/float64(cur)))))
		}
		d.RetryAfter = msDuration(max(1, retry))
	}
	d.Remaining = max(0, int64(math.Floor(float64(L)-est)))
	switch {
	case cur > 0:
		d.ResetAfter = msDuration(toEnd + w)
	case prev > 0:
		d.ResetAfter = msDuration(toEnd)
	}
	return d
}

// SlidingWindow is the in-memory twin of RedisSlidingWindow: the same decisions from the same
// arithmetic (decideSlidingWindow), as long as a clock runs at most one window behind the newest
// time a key has seen (it keeps a key's three newest windows) and Redis has not expired a window
// key the twin still holds. It never expires a key. It is safe for concurrent use, and a decision
// on an existing key allocates nothing. The zero value is not usable: use NewSlidingWindow.
type SlidingWindow struct {
	policy SlidingWindowPolicy
	states stateStripes[windowCounts]
}

var _ Limiter = (*SlidingWindow)(nil)

// NewSlidingWindow returns an empty in-memory sliding-window counter with policy p. Timeout and
// NOSCRIPT options are ignored; WithPolicyFunc is refused (ErrBadConfig).
func NewSlidingWindow(p SlidingWindowPolicy, opts ...Option) (*SlidingWindow, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: sliding window policy: %w", ErrBadConfig, err)
	}
	if _, err := newWindowConfig("sliding window", opts); err != nil {
		return nil, err
	}
	s := &SlidingWindow{policy: p}
	s.states.init()
	return s, nil
}

// Allow decides r at r.Now (time.Now when zero). ctx is not used.
func (s *SlidingWindow) Allow(_ context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	var buf [maxStackKey]byte
	stripe, st := s.states.lockBytes(AppendKey(buf[:0], r.Tenant, r.Endpoint))
	d := decideSlidingWindow(s.policy, st, nowMs, r.Cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, decidedAt(r, nowMs)
	return d, nil
}

// AllowAt decides a request of cost units (>= 0) on key (KeyFor(tenant, endpoint), without the
// window suffix) at nowMs (Unix ms, > 0): the pure, clock-free form of Allow (Decision.At is
// nowMs).
func (s *SlidingWindow) AllowAt(key string, nowMs, cost int64) Decision {
	stripe, st := s.states.lockString(key)
	d := decideSlidingWindow(s.policy, st, nowMs, cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, time.UnixMilli(nowMs)
	return d
}

// Count returns the count the twin holds for key (KeyFor form) in window index (0 when it holds
// none).
func (s *SlidingWindow) Count(key string, index int64) int64 {
	st, _ := s.states.get(key)
	return st.get(index)
}

// Len returns the number of keys the twin holds.
func (s *SlidingWindow) Len() int { return s.states.len() }
