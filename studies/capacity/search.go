package capacity

import (
	"cmp"
	"context"
)

// Search is how a sweep steps the offered rate: geometric steps from Start by Factor until a step
// fails its SLO or Max is reached, then bisection between the last passing and the first failing
// rate, at most Bisect times and only while they differ by more than Tolerance (relative).
type Search struct {
	Start, Factor, Max float64
	Bisect             int
	Tolerance          float64
}

// Search defaults.
const (
	DefaultStartRate = 1000
	DefaultFactor    = 2
	DefaultMaxRate   = 200_000
	DefaultBisect    = 3
	DefaultTolerance = 0.05
)

// withDefaults fills s's zero fields with the Default* constants; a negative Bisect is none.
func (s Search) withDefaults() Search {
	s.Start = cmp.Or(s.Start, DefaultStartRate)
	s.Factor = cmp.Or(s.Factor, DefaultFactor)
	s.Max = cmp.Or(s.Max, DefaultMaxRate)
	s.Tolerance = cmp.Or(s.Tolerance, DefaultTolerance)
	if s.Bisect == 0 {
		s.Bisect = DefaultBisect
	} else if s.Bisect < 0 {
		s.Bisect = 0
	}
	return s
}

// measureFunc runs one step at the offered rate.
type measureFunc func(ctx context.Context, rate float64, phase string) (Step, error)

// run executes the search and returns every step in order; the knee is the passing step with
// the highest offered rate (nil when none passed).
func (s Search) run(ctx context.Context, measure measureFunc) ([]Step, *Step, error) {
	var steps []Step
	lo, hi := 0.0, 0.0 // last pass, first fail
	for rate := s.Start; ; rate = min(rate*s.Factor, s.Max) {
		st, err := measure(ctx, rate, "step")
		if err != nil {
			return steps, knee(steps), err
		}
		steps = append(steps, st)
		if !st.Pass {
			hi = rate
			break
		}
		lo = rate
		if rate >= s.Max {
			break
		}
	}
	for i := 0; hi > 0 && i < s.Bisect && hi-lo > s.Tolerance*hi; i++ {
		mid := (lo + hi) / 2
		st, err := measure(ctx, mid, "bisect")
		if err != nil {
			return steps, knee(steps), err
		}
		steps = append(steps, st)
		if st.Pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	return steps, knee(steps), nil
}

func knee(steps []Step) *Step {
	var k *Step
	for i := range steps {
		if steps[i].Pass && (k == nil || steps[i].Offered > k.Offered) {
			k = &steps[i]
		}
	}
	if k == nil {
		return nil
	}
	c := *k
	return &c
}
