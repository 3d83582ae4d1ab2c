package attack

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"ratelab/limiter"
	"ratelab/scenarios"
)

// ParsePolicy reads a declared bucket policy written "rate=50,burst=100" (tokens per second,
// tokens), the form of --policy (run, gateway, simulate; attack's reads a window too, see
// ParseDeclared).
func ParsePolicy(s string) (limiter.BucketPolicy, error) {
	var p limiter.BucketPolicy
	var haveRate, haveBurst bool
	err := policyPairs(s, "rate=50,burst=100", func(k, v string) error {
		switch strings.TrimSpace(k) {
		case "rate":
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || !(f > 0) || math.IsInf(f, 0) {
				return fmt.Errorf("%w: policy %q: rate %q: want tokens per second > 0, e.g. rate=50", ErrInvalid, s, v)
			}
			p.Rate, haveRate = f, true
		case "burst":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 1 {
				return fmt.Errorf("%w: policy %q: burst %q: want a whole number of tokens >= 1, e.g. burst=100", ErrInvalid, s, v)
			}
			p.Burst, haveBurst = n, true
		default:
			return fmt.Errorf("%w: policy %q: unknown key %q; the keys are rate and burst", ErrInvalid, s, k)
		}
		return nil
	})
	if err == nil && (!haveRate || !haveBurst) {
		err = fmt.Errorf("%w: policy %q: give both rate and burst, e.g. rate=50,burst=100", ErrInvalid, s)
	}
	return p, err
}

// policyPairs calls set with the key and value of each comma-separated key=value of the policy
// s, stopping at the first error; an item without = is refused with example as the fix.
func policyPairs(s, example string, set func(k, v string) error) error {
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return fmt.Errorf("%w: policy %q: %q is not key=value; write %s", ErrInvalid, s, kv, example)
		}
		if err := set(k, v); err != nil {
			return err
		}
	}
	return nil
}

// ParseEndpoints reads an endpoint mix written "search:3,read:1" (name:weight; a name alone
// weighs 1), the form of `ratelab attack --endpoints`.
func ParseEndpoints(s string) (names []string, weights []float64, err error) {
	for _, item := range strings.Split(s, ",") {
		name, w, hasW := strings.Cut(strings.TrimSpace(item), ":")
		if name == "" {
			return nil, nil, fmt.Errorf("%w: endpoints %q: empty name; write search:3,read:1", ErrInvalid, s)
		}
		weight := 1.0
		if hasW {
			weight, err = strconv.ParseFloat(w, 64)
			if err != nil || !(weight >= 0) || math.IsInf(weight, 0) {
				return nil, nil, fmt.Errorf("%w: endpoints %q: weight %q of %s: want a number >= 0", ErrInvalid, s, w, name)
			}
		}
		names = append(names, name)
		weights = append(weights, weight)
	}
	return names, weights, nil
}

// ParseSLO reads SLO checks written key=value (`ratelab attack --slo`, repeatable) with the
// scenarios package's parser and limits, as `ratelab run --slo` reads them: the same keys, the
// same refusals (a ratio above 1, a negative limit...).
func ParseSLO(kvs []string) (scenarios.SLO, error) {
	var s scenarios.Spec
	for _, kv := range kvs {
		if err := s.SetSLO(kv); err != nil {
			return scenarios.SLO{}, err
		}
	}
	// The empty spec fails its other fields' checks; only the slo fields' are the checks'.
	var errs []error
	for _, err := range unjoin(s.Validate()) {
		var fe *scenarios.FieldError
		if errors.As(err, &fe) && strings.HasPrefix(fe.Field, "slo.") {
			errs = append(errs, fmt.Errorf("--slo %s=%s: %s", strings.TrimPrefix(fe.Field, "slo."), fe.Value, fe.Fix))
		}
	}
	return s.SLO, errors.Join(errs...)
}

// unjoin lists the errors errors.Join joined into err (err itself if it is not a join).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
