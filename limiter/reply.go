package limiter

import "fmt"

// replyFields names the script's four reply integers, in order.
var replyFields = [4]string{"allowed", "remaining", "retry_after_ms", "reset_after_ms"}

// decodeReply turns the script's reply {allowed, remaining, retry_after_ms, reset_after_ms}
// into a Decision (Source unset). Any other shape, or a value the script cannot produce, is an
// error wrapping ErrBadReply; it never panics. It allocates only when it fails.
func decodeReply(v any) (Decision, error) {
	arr, ok := v.([]any)
	if !ok {
		return Decision{}, fmt.Errorf("%w: got %T, want an array of 4 integers", ErrBadReply, v)
	}
	if len(arr) != len(replyFields) {
		return Decision{}, fmt.Errorf("%w: got %d elements, want 4 (%v)", ErrBadReply, len(arr), replyFields)
	}
	var n [len(replyFields)]int64
	for i, e := range arr {
		x, ok := e.(int64)
		if !ok {
			return Decision{}, fmt.Errorf("%w: %s is %T %v, want an integer", ErrBadReply, replyFields[i], e, e)
		}
		n[i] = x
	}
	allowed, remaining, retry, reset := n[0], n[1], n[2], n[3]
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
