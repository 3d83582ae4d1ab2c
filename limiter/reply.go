package limiter

import (
	"fmt"
	"time"
)

// replyFields names the script's reply integers, in order: four in every decision script's
// reply, and a fifth, now_ms, in token_bucket.lua's reply with the Redis clock.
var replyFields = [5]string{"allowed", "remaining", "retry_after_ms", "reset_after_ms", "now_ms"}

// maxNowMs bounds a script's now_ms: the scripts' doubles hold every integer up to 2^53 exactly.
const maxNowMs = 1 << 53

// decodeReply turns the script's reply {allowed, remaining, retry_after_ms, reset_after_ms}
// into a Decision (Source and At unset). Any other shape, or a value the script cannot produce,
// is an error wrapping ErrBadReply; it never panics. It allocates only when it fails.
func decodeReply(v any) (Decision, error) {
	arr, ok := v.([]any)
	if !ok {
		return Decision{}, fmt.Errorf("%w: got %T, want an array of 4 integers", ErrBadReply, v)
	}
	if len(arr) != 4 {
		return Decision{}, fmt.Errorf("%w: got %d elements, want 4 (%v)", ErrBadReply, len(arr), replyFields[:4])
	}
	var n [4]int64
	if err := replyInts(arr, n[:]); err != nil {
		return Decision{}, err
	}
	return decisionOf(n[0], n[1], n[2], n[3])
}

// decodeTimedReply decodes token_bucket.lua's reply with the Redis clock, {allowed, remaining,
// retry_after_ms, reset_after_ms, now_ms}: the four as decodeReply does, and now_ms, the server's
// TIME the script read (Unix ms, 1..2^53), as Decision.At. Any other shape is an error wrapping
// ErrBadReply; it never panics and allocates only when it fails.
func decodeTimedReply(v any) (Decision, error) {
	arr, ok := v.([]any)
	if !ok {
		return Decision{}, fmt.Errorf("%w: got %T, want an array of 5 integers", ErrBadReply, v)
	}
	if len(arr) != 5 {
		return Decision{}, fmt.Errorf("%w: got %d elements, want 5 (%v)", ErrBadReply, len(arr), replyFields)
	}
	var n [5]int64
	if err := replyInts(arr, n[:]); err != nil {
		return Decision{}, err
	}
	if now := n[4]; now < 1 || now > maxNowMs {
		return Decision{}, fmt.Errorf("%w: now_ms = %d, want 1..2^53 (Unix ms)", ErrBadReply, now)
	}
	d, err := decisionOf(n[0], n[1], n[2], n[3])
	if err != nil {
		return Decision{}, err
	}
	d.At = time.UnixMilli(n[4])
	return d, nil
}

// replyInts copies arr's elements, which must all be integers, into n (as long as arr).
func replyInts(arr []any, n []int64) error {
	for i, e := range arr {
		x, ok := e.(int64)
		if !ok {
			return fmt.Errorf("%w: %s is %T %v, want an integer", ErrBadReply, replyFields[i], e, e)
		}
		n[i] = x
	}
	return nil
}

// decisionOf checks the four decision integers against the scripts' contract and returns their
// Decision (Source and At unset).
func decisionOf(allowed, remaining, retry, reset int64) (Decision, error) {
	switch {
	case allowed != 0 && allowed != 1:
		return Decision{}, fmt.Errorf("%w: allowed = %d, want 0 or 1", ErrBadReply, allowed)
	case remaining < 0:
		return Decision{}, fmt.Errorf("%w: remaining = %d, want >= 0", ErrBadReply, remaining)
	case allowed == 1 && retry != 0:
		return Decision{}, fmt.Errorf("%w: retry_after_ms = %d on an allowed request, want 0", ErrBadReply, retry)
	case allowed == 0 && retry != -1 && retry < 1:
		// A denial lacks (cost - tokens) > 0 tokens, so its ceil is at least 1 ms; -1 is never.
		return Decision{}, fmt.Errorf("%w: retry_after_ms = %d on a denied request, want -1 or >= 1", ErrBadReply, retry)
	case retry > maxExactMs:
		return Decision{}, fmt.Errorf("%w: retry_after_ms = %d, want <= %d", ErrBadReply, retry, maxExactMs)
	case reset < 0 || reset > maxExactMs:
		return Decision{}, fmt.Errorf("%w: reset_after_ms = %d, want 0..%d", ErrBadReply, reset, maxExactMs)
	}
	return Decision{
		Allowed:    allowed == 1,
		Remaining:  remaining,
		RetryAfter: msDuration(retry),
		ResetAfter: msDuration(reset),
	}, nil
}
