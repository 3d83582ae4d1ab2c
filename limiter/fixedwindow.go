package limiter

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// WindowKeySlack is how long a window algorithm's key outlives its window: the PEXPIRE is the
// window plus this slack, so a gateway whose clock runs up to this far behind still finds the
// window it counts in.
const WindowKeySlack = time.Second

// maxWindowMs bounds a window (about 34 years): window indexes times the window stay far below
// 2^53 for any Unix-millisecond time, so the scripts' doubles are exact.
const maxWindowMs = int64(1) << 40

// FixedWindowPolicy allows Limit cost units per window of Window, windows aligned on multiples of
// Window since the Unix epoch. A client may spend Limit just before a window's end and Limit
// again at its start: up to 2*Limit within any Window-long span (the "double burst at the edge").
type FixedWindowPolicy struct {
	// Window is the window length, a whole number of milliseconds >= 1 ms.
	Window time.Duration
	// Limit is the number of cost units allowed per window, >= 1.
	Limit int64
}

// Validate reports a policy that no fixed window can implement.
func (p FixedWindowPolicy) Validate() error {
	if err := checkWindow(p.Window); err != nil {
		return err
	}
	if p.Limit < 1 || p.Limit > 1<<53 {
		return fmt.Errorf("limit %d: must be 1..2^53 cost units per window", p.Limit)
	}
	return nil
}

// checkWindow reports a window that is not a whole number of ms in 1 ms..2^40 ms.
func checkWindow(w time.Duration) error {
	if w < time.Millisecond || w%time.Millisecond != 0 || w.Milliseconds() > maxWindowMs {
		return fmt.Errorf("window %v: must be a whole number of milliseconds from 1ms to %v", w, time.Duration(maxWindowMs)*time.Millisecond)
	}
	return nil
}

// TTL is the PEXPIRE of a window key: the window plus WindowKeySlack.
func (p FixedWindowPolicy) TTL() time.Duration { return p.Window + WindowKeySlack }

// FixedWindowKey returns the counter key of a tenant's endpoint in window index (floor of Unix
// ms / window ms): KeyFor(tenant, endpoint) + ":fw:" + index.
func FixedWindowKey(tenant, endpoint string, index int64) string {
	var buf [maxStackKey]byte
	b := AppendKey(buf[:0], tenant, endpoint)
	b = append(b, ":fw:"...)
	return string(strconv.AppendInt(b, index, 10))
}

// fixedWindowState is one key's last two windows in the twin: the newest window seen (cur) and
// one older window (prev). A zero state has no counts.
type fixedWindowState struct {
	curIdx, cur, prevIdx, prev int64
}

// decideFixedWindow makes one decision at nowMs for cost units, the arithmetic of
// lua/fixed_window.lua (all integers):
//
//	index     = floor(now / W);  to_end = (index + 1) * W - now   // 1..W ms
//	allowed   = count + cost <= L                                 // then count += cost
//	remaining = max(0, L - count)
//	retry_ms  = 0 if allowed; -1 (RetryNever) if cost > L; else to_end
//	reset_ms  = to_end, or 0 when count is 0
//
// A denied request does not count. The twin keeps the two newest windows of a key: a request in
// a window older than both (a clock more than one window behind) sees an empty window and is not
// remembered, where Redis would find that window's key while it lives.
func decideFixedWindow(p FixedWindowPolicy, st *fixedWindowState, nowMs, cost int64) Decision {
	w := p.Window.Milliseconds()
	idx := nowMs / w
	var scratch int64
	count := &scratch
	switch {
	case idx == st.curIdx:
		count = &st.cur
	case idx == st.prevIdx:
		count = &st.prev
	case idx > st.curIdx:
		st.prevIdx, st.prev = st.curIdx, st.cur
		st.curIdx, st.cur = idx, 0
		count = &st.cur
	case idx > st.prevIdx:
		st.prevIdx, st.prev = idx, 0
		count = &st.prev
	}
	toEnd := (idx+1)*w - nowMs
	var d Decision
	switch {
	case *count+cost <= p.Limit:
		*count += cost
		d.Allowed = true
	case cost > p.Limit:
		d.RetryAfter = RetryNever
	default:
		d.RetryAfter = msDuration(toEnd)
	}
	d.Remaining = max(0, p.Limit-*count)
	if *count > 0 {
		d.ResetAfter = msDuration(toEnd)
	}
	return d
}

// FixedWindow is the in-memory twin of RedisFixedWindow: the same decisions from the same integer
// arithmetic (decideFixedWindow), as long as a clock runs at most one window behind the newest
// time a key has seen and Redis has not expired a window key the twin still holds. It never
// expires a key. It is safe for concurrent use, and a decision on an existing key allocates
// nothing. The zero value is not usable: use NewFixedWindow.
type FixedWindow struct {
	policy FixedWindowPolicy
	states stateStripes[fixedWindowState]
}

var _ Limiter = (*FixedWindow)(nil)

// NewFixedWindow returns an empty in-memory fixed-window limiter with policy p. Timeout and
// NOSCRIPT options are ignored; WithPolicyFunc is refused (ErrBadConfig).
func NewFixedWindow(p FixedWindowPolicy, opts ...Option) (*FixedWindow, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: fixed window policy: %w", ErrBadConfig, err)
	}
	if _, err := newWindowConfig("fixed window", opts); err != nil {
		return nil, err
	}
	f := &FixedWindow{policy: p}
	f.states.init()
	return f, nil
}

// Allow decides r at r.Now (time.Now when zero). ctx is not used.
func (f *FixedWindow) Allow(_ context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	var buf [maxStackKey]byte
	stripe, st := f.states.lockBytes(AppendKey(buf[:0], r.Tenant, r.Endpoint))
	d := decideFixedWindow(f.policy, st, nowMs, r.Cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, decidedAt(r, nowMs)
	return d, nil
}

// AllowAt decides a request of cost units (>= 0) on key (KeyFor(tenant, endpoint), without the
// window suffix) at nowMs (Unix ms, > 0): the pure, clock-free form of Allow (Decision.At is
// nowMs).
func (f *FixedWindow) AllowAt(key string, nowMs, cost int64) Decision {
	stripe, st := f.states.lockString(key)
	d := decideFixedWindow(f.policy, st, nowMs, cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, time.UnixMilli(nowMs)
	return d
}

// Count returns the count key (KeyFor form) holds for window index, and whether the twin holds
// that window.
func (f *FixedWindow) Count(key string, index int64) (int64, bool) {
	st, ok := f.states.get(key)
	switch {
	case !ok:
		return 0, false
	case index == st.curIdx:
		return st.cur, true
	case index == st.prevIdx:
		return st.prev, true
	}
	return 0, false
}

// Len returns the number of keys the twin holds.
func (f *FixedWindow) Len() int { return f.states.len() }
