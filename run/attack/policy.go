package attack

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"ratelab/limiter"
	"ratelab/run/check"
)

// WindowPolicy is a declared window limit: at most Limit requests per tenant and endpoint in
// any Window, judged as a sliding window (check.Window), whatever window the target keeps.
type WindowPolicy struct {
	Limit  int64
	Window time.Duration
}

// Validate refuses a limit below 1 and a window shorter than a millisecond (the envelope's
// resolution).
func (w WindowPolicy) Validate() error {
	var errs []error
	if w.Limit < 1 {
		errs = append(errs, fmt.Errorf("limit %d: want a whole number of requests >= 1", w.Limit))
	}
	if w.Window < time.Millisecond {
		errs = append(errs, fmt.Errorf("window %v: want at least 1ms", w.Window))
	}
	return errors.Join(errs...)
}

// String is the policy as ParseDeclared reads it.
func (w WindowPolicy) String() string {
	return "limit=" + strconv.FormatInt(w.Limit, 10) + ",window=" + w.Window.String()
}

// ParseDeclared reads a declared policy: a token bucket "rate=50,burst=100" (see ParsePolicy)
// or a sliding window "limit=100,window=1s" (requests, a Go duration). Exactly one of the two
// results is set.
func ParseDeclared(s string) (limiter.BucketPolicy, WindowPolicy, error) {
	if !strings.Contains(s, "limit=") && !strings.Contains(s, "window=") {
		p, err := ParsePolicy(s)
		return p, WindowPolicy{}, err
	}
	var w WindowPolicy
	var haveLimit, haveWindow bool
	err := policyPairs(s, "limit=100,window=1s", func(k, v string) error {
		v = strings.TrimSpace(v)
		switch k = strings.TrimSpace(k); k {
		case "limit":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return fmt.Errorf("%w: policy %q: limit %q: want a whole number of requests >= 1, e.g. limit=100", ErrInvalid, s, v)
			}
			w.Limit, haveLimit = n, true
		case "window":
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Millisecond {
				return fmt.Errorf("%w: policy %q: window %q: want a duration of at least 1ms, e.g. window=1s", ErrInvalid, s, v)
			}
			w.Window, haveWindow = d, true
		default:
			return fmt.Errorf("%w: policy %q: unknown key %q; a window policy has limit and window (a bucket rate and burst)", ErrInvalid, s, k)
		}
		return nil
	})
	if err == nil && (!haveLimit || !haveWindow) {
		err = fmt.Errorf("%w: policy %q: give both limit and window, e.g. limit=100,window=1s", ErrInvalid, s)
	}
	return limiter.BucketPolicy{}, w, err
}

// windowed reports whether the declared policy is o.Window rather than o.Policy.
func (o Options) windowed() bool { return o.Window.Limit > 0 }

// newDeclaredChecker is the envelope of the declared policy for keys dense keys.
func (o Options) newDeclaredChecker(keys int) check.Checker {
	if o.windowed() {
		return check.NewWindow(keys, o.Window.Limit, o.Window.Window.Milliseconds())
	}
	policy := o.Policy
	return check.NewBucket(keys, func(int) limiter.BucketPolicy { return policy })
}

// refillInterval is the declared policy's time per request: 1/rate of a bucket, Window/Limit of
// a window (what a steady client at the limit waits between requests).
func (o Options) refillInterval() time.Duration {
	if o.windowed() {
		return o.Window.Window / time.Duration(o.Window.Limit)
	}
	if o.Policy.Rate > 0 {
		return time.Duration(float64(time.Second) / o.Policy.Rate)
	}
	return 0
}

// maxRefill is the most requests the declared policy lets a key regain in d: rate x d of a
// bucket, Limit per started Window of a window (a sliding log can free its whole limit at once).
func (o Options) maxRefill(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	if o.windowed() {
		return o.Window.Limit * int64((d+o.Window.Window-1)/o.Window.Window)
	}
	return int64(o.Policy.Rate * d.Seconds())
}
