package limiter

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"ratelab/lua"
)

// settle books the result of fetch f (started at generation gen by a request at nowMs that
// lacked need tokens) into e, kept in stripe, and wakes f's waiters. It returns the grant and the
// denial as the fetching request sees them: a grant that Drop overtook is lost. Called with
// stripe locked.
func (l *LeaseLimiter) settle(stripe *leaseStripe, e *leaseEntry, f *leaseCall, gen, nowMs, need, granted int64, denial Decision, emptyMs int64, err error) (int64, Decision) {
	e.fetch = nil
	f.granted, f.denial, f.err = granted, denial, err
	if granted > 0 {
		if l.gen.Load() != gen {
			l.lost.Add(granted) // dropped while fetching: the grant is lost with the gateway
			granted, denial = 0, Decision{RetryAfter: time.Millisecond}
			f.granted, f.denial = granted, denial
		} else {
			// Leftover tokens join the new lease and live as long as it does.
			was := heldBy(e)
			e.tokens += granted
			e.expiresAt = nowMs + l.ttlMs
			l.book.holdGrant(stripe, e, was, &l.lastMs)
			e.drainedUntil = 0
			if emptyMs >= 0 {
				// The central bucket is drained: once this lease is spent, deny locally
				// until it can hold a token again (RetryAfter says when).
				e.refusedUntil, e.refusedCost = nowMs+emptyMs, 1
				l.markDrained(e)
			}
		}
	} else if err == nil && denial.RetryAfter > 0 && denial.RetryAfter != RetryNever {
		e.refusedUntil, e.refusedCost = nowMs+denial.RetryAfter.Milliseconds(), need
		if need == 1 {
			l.markDrained(e) // less than one token: drained, as after a draining grant
		}
	}
	close(f.done)
	return granted, denial
}

// markDrained keeps e drained (refresh-ahead only) until one token's refill time after the
// later of refusedUntil and the latest request time seen: a fetch answers after its requests'
// clock has moved on, and the key's requests meanwhile must find it still drained. Called with
// e's stripe locked, after refusedUntil is set.
func (l *LeaseLimiter) markDrained(e *leaseEntry) {
	if l.refresh {
		e.drainedUntil = max(e.refusedUntil, l.lastMs.Load()) + l.drainGraceMs
	}
}

// startRefresh starts a top-up fetch of key's lease e in the background (refresh-ahead), dated
// nowMs: size - e.tokens tokens wanted, at least 1. Requests that the lease cannot pay
// meanwhile wait for it as for any fetch in flight. The fetch runs under the lease timeout
// only: no request's context owns it. Called with e's stripe locked.
func (l *LeaseLimiter) startRefresh(e *leaseEntry, key string, nowMs int64) *leaseCall {
	f := &leaseCall{done: make(chan struct{})}
	e.fetch = f
	gen := l.gen.Load()
	want := l.size - e.tokens
	l.refreshes.Add(1)
	stripe := &l.stripes[maphash.String(l.seed, key)&(numStripes-1)]
	l.refreshing.Add(1)
	go func() {
		defer l.refreshing.Done()
		l.slots <- struct{}{}
		defer func() { <-l.slots }()
		ctx := context.Background()
		if l.timeout == 0 {
			// No request owns this fetch, so no caller's deadline bounds it.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, l.fetchTimeout())
			defer cancel()
		}
		granted, denial, emptyMs, err := l.fetch(ctx, key, nowMs, want, 1)
		if err != nil {
			l.refreshErrs.Add(1)
		}
		stripe.mu.Lock()
		l.settle(stripe, e, f, gen, nowMs, 1, granted, denial, emptyMs, err)
		out := l.wake(stripe, e, f)
		stripe.mu.Unlock()
		deliver(out)
	}()
	return f
}

// fetch runs lease.lua once for want tokens (at least least of them). It returns the grant, or 0
// and the central denial (Source unset). After a grant that drained the central bucket, emptyMs
// >= 0 is a lower bound on how long it stays without one whole token (see drainedForMs); it is
// -1 otherwise.
func (l *LeaseLimiter) fetch(ctx context.Context, key string, nowMs, want, least int64) (granted int64, d Decision, emptyMs int64, err error) {
	l.calls.Add(1)
	args := [...]any{nowMs, l.args.ratePerMs, l.args.capacity, want, least, l.args.ttlMs}
	var reply any
	if l.batch != nil {
		// The batcher applies the timeout itself; NOSCRIPT->EVAL happens inside the batch,
		// counted through its hook.
		reply, _, err = l.batch.run(ctx, l.timeout, l.sha, lua.Lease, key, "", args[:]) // leases have no WithDurability
	} else {
		if l.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, l.timeout)
			defer cancel()
		}
		keys := []string{key}
		reply, err = l.c.EvalSha(ctx, l.sha, keys, args[:]...).Result()
		if err != nil && ClassifyError(err) == KindNoScript {
			// The one retry: EVAL runs the script and caches it on that node.
			l.noScript.Add(1)
			reply, err = l.c.Eval(ctx, lua.Lease, keys, args[:]...).Result()
		}
	}
	if err != nil {
		return 0, Decision{}, 0, fmt.Errorf("limiter: lease %s: %w", key, err)
	}
	granted, d, err = decodeLeaseReply(reply, want, least)
	if err != nil {
		return 0, Decision{}, 0, fmt.Errorf("limiter: lease %s: %w", key, err)
	}
	emptyMs = -1
	if granted > 0 {
		emptyMs = l.drainedForMs(reply)
	}
	return granted, d, emptyMs, nil
}

// drainedForMs reads a checked grant reply {granted, remaining, 0, reset_after_ms}. When the grant
// left the bucket with less than one whole token (remaining 0), the next fetch would be refused
// until one token has refilled; it returns a lower bound on that time in ms (0 if none is known:
// the bucket is drained all the same), so that the requests meanwhile are denied locally instead
// of each paying a refused round trip. On a saturated key that saves the refused fetch between
// two grants. It returns -1 when the bucket kept a whole token.
//
// The bound: reset = ceil((burst - t) / r) for the tokens t left, so t < burst - (reset-1)*r and
// one token takes (1 - t) / r > reset - 1 - (burst-1)/r ms. One more ms is taken off for the
// rounding of the division. Other gateways only lower the bucket, so the bound holds for them too.
func (l *LeaseLimiter) drainedForMs(reply any) int64 {
	arr := reply.([]any) // decodeLeaseReply checked the shape
	remaining, reset := arr[1].(int64), arr[3].(int64)
	if remaining != 0 {
		return -1
	}
	lb := math.Floor(float64(reset) - 2 - float64(l.policy.Burst-1)/l.policy.PerMs())
	if !(lb >= 1) {
		return 0
	}
	return int64(lb)
}

// decodeLeaseReply checks lease.lua's reply {granted, remaining, retry_after_ms, reset_after_ms}
// for a call with want and least (ARGV min). It returns the grant and, when it is 0, the denial.
func decodeLeaseReply(v any, want, least int64) (int64, Decision, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 4 {
		return 0, Decision{}, fmt.Errorf("%w: lease.lua replied %T %v, want an array of 4 integers", ErrBadReply, v, v)
	}
	var n [4]int64
	for i, e := range arr {
		x, ok := e.(int64)
		if !ok {
			return 0, Decision{}, fmt.Errorf("%w: lease.lua reply element %d is %T %v, want an integer", ErrBadReply, i, e, e)
		}
		n[i] = x
	}
	granted, remaining, retry, reset := n[0], n[1], n[2], n[3]
	switch {
	case granted != 0 && (granted < least || granted > want):
		return 0, Decision{}, fmt.Errorf("%w: granted = %d, want 0 or %d..%d", ErrBadReply, granted, least, want)
	case remaining < 0:
		return 0, Decision{}, fmt.Errorf("%w: remaining = %d, want >= 0", ErrBadReply, remaining)
	case granted > 0 && retry != 0:
		return 0, Decision{}, fmt.Errorf("%w: retry_after_ms = %d with a grant, want 0", ErrBadReply, retry)
	case granted == 0 && retry != -1 && (retry < 1 || retry > maxExactMs):
		return 0, Decision{}, fmt.Errorf("%w: retry_after_ms = %d without a grant, want -1 or 1..%d", ErrBadReply, retry, maxExactMs)
	case reset < 0 || reset > maxExactMs:
		return 0, Decision{}, fmt.Errorf("%w: reset_after_ms = %d, want 0..%d", ErrBadReply, reset, maxExactMs)
	}
	if granted > 0 {
		return granted, Decision{}, nil
	}
	return 0, Decision{Remaining: remaining, RetryAfter: msDuration(retry), ResetAfter: msDuration(reset)}, nil
}
