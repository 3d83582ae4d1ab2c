package limiter

import (
	"context"
	"fmt"
	"time"
)

// MaxSlidingLogLimit bounds a sliding log's Limit: Redis stores one sorted-set member (tens of
// bytes) per cost unit in the window, and the script adds a request's members one by one.
const MaxSlidingLogLimit = 100_000

// SlidingLogPolicy allows at most Limit cost units in any window (now - Window, now]: exact, at
// the price of one stored timestamp per unit.
type SlidingLogPolicy struct {
	// Window is the window length, a whole number of milliseconds >= 1 ms.
	Window time.Duration
	// Limit is the number of cost units allowed in any window, 1..MaxSlidingLogLimit.
	Limit int64
}

// Validate reports a policy that the sliding log cannot implement.
func (p SlidingLogPolicy) Validate() error {
	if err := checkWindow(p.Window); err != nil {
		return err
	}
	if p.Limit < 1 || p.Limit > MaxSlidingLogLimit {
		return fmt.Errorf("limit %d: must be 1..%d cost units per window (one stored entry each)", p.Limit, MaxSlidingLogLimit)
	}
	return nil
}

// TTL is the PEXPIRE of a log key: the window plus WindowKeySlack after its newest entry.
func (p SlidingLogPolicy) TTL() time.Duration { return p.Window + WindowKeySlack }

// SlidingLogKey returns the log key of a tenant's endpoint: KeyFor(tenant, endpoint) + ":sl".
func SlidingLogKey(tenant, endpoint string) string { return KeyFor(tenant, endpoint) + ":sl" }

// logBatch is n log entries at one time ms: the twin stores a request's cost units as one batch.
type logBatch struct{ ts, n int64 }

// slidingLogState is one key's log in the twin: batches in ascending time and their total.
type slidingLogState struct {
	batches []logBatch
	count   int64
}

// decideSlidingLog makes one decision at nowMs for cost units, the integer arithmetic of
// lua/sliding_log.lua:
//
//	now       = max(nowMs, newest entry);  drop entries at or before now - W;  count = entries
//	allowed   = count + cost <= L          // then cost entries at now
//	remaining = max(0, L - count)
//	retry_ms  = 0 if allowed; -1 (RetryNever) if cost > L; else s + W - now for the score s of
//	            the (count + cost - L)-th oldest entry
//	reset_ms  = newest + W - now, or 0 when the log is empty
//
// It allocates only when a key's log grows beyond the capacity it had.
func decideSlidingLog(p SlidingLogPolicy, st *slidingLogState, nowMs, cost int64) Decision {
	w := p.Window.Milliseconds()
	now := nowMs
	if n := len(st.batches); n > 0 {
		now = max(now, st.batches[n-1].ts)
	}
	drop := 0
	for drop < len(st.batches) && st.batches[drop].ts <= now-w {
		st.count -= st.batches[drop].n
		drop++
	}
	if drop > 0 {
		st.batches = st.batches[:copy(st.batches, st.batches[drop:])] // reuse the array: no allocation
	}
	var d Decision
	switch {
	case st.count+cost <= p.Limit:
		if cost > 0 {
			if n := len(st.batches); n > 0 && st.batches[n-1].ts == now {
				st.batches[n-1].n += cost
			} else {
				st.batches = append(st.batches, logBatch{ts: now, n: cost})
			}
			st.count += cost
		}
		d.Allowed = true
	case cost > p.Limit:
		d.RetryAfter = RetryNever
	default:
		k := st.count + cost - p.Limit // 1..count: the entry whose leaving makes room
		for _, r := range st.batches {
			if k <= r.n {
				d.RetryAfter = msDuration(r.ts + w - now)
				break
			}
			k -= r.n
		}
	}
	d.Remaining = max(0, p.Limit-st.count)
	if st.count > 0 {
		d.ResetAfter = msDuration(st.batches[len(st.batches)-1].ts + w - now)
	}
	return d
}

// SlidingLog is the in-memory twin of RedisSlidingLog: the same decisions from the same integer
// arithmetic (decideSlidingLog). It stores a request's units as one (time, count) batch and never
// expires a key; as long as Redis has not expired a log the twin still holds, they agree. It is
// safe for concurrent use; a decision allocates only when a key's log outgrows its array. The
// zero value is not usable: use NewSlidingLog.
type SlidingLog struct {
	policy SlidingLogPolicy
	states stateStripes[slidingLogState]
}

var _ Limiter = (*SlidingLog)(nil)

// NewSlidingLog returns an empty in-memory sliding log with policy p. Timeout and NOSCRIPT
// options are ignored; WithPolicyFunc is refused (ErrBadConfig).
func NewSlidingLog(p SlidingLogPolicy, opts ...Option) (*SlidingLog, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: sliding log policy: %w", ErrBadConfig, err)
	}
	if _, err := newWindowConfig("sliding log", opts); err != nil {
		return nil, err
	}
	s := &SlidingLog{policy: p}
	s.states.init()
	return s, nil
}

// Allow decides r at r.Now (time.Now when zero). ctx is not used.
func (s *SlidingLog) Allow(_ context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	var buf [maxStackKey]byte
	stripe, st := s.states.lockBytes(AppendKey(buf[:0], r.Tenant, r.Endpoint))
	d := decideSlidingLog(s.policy, st, nowMs, r.Cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, decidedAt(r, nowMs)
	return d, nil
}

// AllowAt decides a request of cost units (>= 0) on key (KeyFor(tenant, endpoint)) at nowMs
// (Unix ms, > 0): the pure, clock-free form of Allow (Decision.At is nowMs).
func (s *SlidingLog) AllowAt(key string, nowMs, cost int64) Decision {
	stripe, st := s.states.lockString(key)
	d := decideSlidingLog(s.policy, st, nowMs, cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, time.UnixMilli(nowMs)
	return d
}

// Count returns the number of entries the twin's log of key (KeyFor form) holds, as of the last
// decision on it.
func (s *SlidingLog) Count(key string) int64 {
	stripe, st := s.states.lockString(key)
	defer stripe.mu.Unlock()
	return st.count
}

// Len returns the number of keys the twin holds.
func (s *SlidingLog) Len() int { return s.states.len() }
