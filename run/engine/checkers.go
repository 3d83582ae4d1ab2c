package engine

import (
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/check"
	"ratelab/scenarios"
)

// NewChecker returns a fresh overspend checker for the run's limiter over the session's keys,
// on the in-process judge's clock (JudgeTick).
func (s *Session) NewChecker() check.Checker {
	return s.checkerAt(s.Tenants, s.Endpoints, s.JudgeTick())
}

// JudgeTick is the unit of the in-process judge's clock: what one "millisecond" of the checker
// NewChecker returns is. Kind redis-rate decides at Redis's TIME, to the microsecond, and says
// when (Decision.At): its decisions are judged to the microsecond, since a whole-millisecond
// judge makes up to rate x 1 ms tokens of difference between the bucket the script saw and the
// one it is judged by. Every other kind computes in whole milliseconds (the gateway's clock,
// the schedule's, or the ms the token-bucket script takes from Redis), and its envelope refills
// in those milliseconds with the script's own arithmetic, bit for bit.
func (s *Session) JudgeTick() time.Duration {
	if s.Spec.Limiter.Kind == scenarios.KindRedisRate && s.Spec.Limiter.Clock == scenarios.ClockRedis {
		return time.Microsecond
	}
	return time.Millisecond
}

// CheckerFor returns a fresh overspend checker for the run's limiter over the keys of tenants x
// endpoints (key k is tenant k/len(endpoints), endpoint k%len(endpoints)): both tiers for
// two-tier, "at most limit in any window" for the window kinds, and otherwise an exact token
// bucket per key with the key's own policy (its tariff, or the scenario's policy). A driver
// that names its keys its own way (the HTTP driver's trace) judges them by their names.
//
// Its clock is in Unix ms: a driver that judges by its own clock (the HTTP driver) judges in ms.
func (s *Session) CheckerFor(tenants, endpoints []string) check.Checker {
	return s.checkerAt(tenants, endpoints, time.Millisecond)
}

// checkerAt is CheckerFor on a clock of tick (a millisecond or a microsecond). Only the token
// bucket takes a finer tick (its policies restated per tick, perTick); the window and two-tier
// envelopes judge ms-native kinds and keep the millisecond.
func (s *Session) checkerAt(tenants, endpoints []string, tick time.Duration) check.Checker {
	spec := s.Spec
	keys := len(tenants) * len(endpoints)
	switch {
	case spec.Limiter.Kind == scenarios.KindTwoTier:
		q := spec.Policy.Quota
		return check.NewTwoTier(len(tenants), len(endpoints), s.policy, q.Limit, time.Duration(q.Window).Milliseconds())
	case spec.WindowKind():
		return check.NewWindow(keys, spec.Policy.Limit, time.Duration(spec.Policy.Window).Milliseconds())
	case s.tariffs != nil:
		lookup, n := s.tariffs.cache.BucketPolicyFunc(), len(endpoints)
		return check.NewBucket(keys, func(key int) limiter.BucketPolicy {
			return perTick(lookup(tenants[key/n], endpoints[key%n]), tick)
		})
	}
	policy := perTick(s.policy, tick)
	return check.NewBucket(keys, func(int) limiter.BucketPolicy { return policy })
}

// perTick restates p for a checker whose "milliseconds" are ticks: the same burst, refilled
// p.Rate x tick tokens per tick. At a tick of 1 ms it is p itself, untouched, so the envelope
// keeps the script's arithmetic bit for bit.
func perTick(p limiter.BucketPolicy, tick time.Duration) limiter.BucketPolicy {
	if tick != time.Millisecond {
		p.Rate *= float64(tick) / float64(time.Millisecond)
	}
	return p
}

// ReorderWindow is how long a denial the checker disagrees with stays provisional in an
// in-process run: a decision that succeeded ran within its timeout of its start, so two requests
// that reached Redis in another order than the checker sees them started less than a timeout
// apart.
func (s *Session) ReorderWindow() time.Duration {
	return max(2*time.Duration(s.Spec.Limiter.Timeout), check.DefaultReorderWindowMs*time.Millisecond)
}

// OverspendOf is the summary's overspend from a checker's totals: confirmed and possible
// figures, their ratios to the requests let through (allowed) and refused (denied), and the
// burst excess with its worst key named by keyName. The bound is Finish's.
func (s *Session) OverspendOf(ot check.Totals, allowed, denied int64, keyName func(key int) string) results.Overspend {
	o := results.Overspend{
		Requests:               ot.OverspendRequests,
		Tokens:                 ot.OverspendTokens,
		Ratio:                  results.Ratio(ot.OverspendRequests, allowed),
		PossibleRequests:       ot.PossibleOverspendRequests,
		PossibleTokens:         ot.PossibleOverspendTokens,
		PossibleRatio:          results.Ratio(ot.PossibleOverspendRequests, allowed),
		FalseDenies:            ot.FalseDenies,
		FalseDenyRatio:         results.Ratio(ot.FalseDenies, denied),
		PossibleFalseDenies:    ot.PossibleFalseDenies,
		PossibleFalseDenyRatio: results.Ratio(ot.PossibleFalseDenies, denied),
		ByCause:                ot.ByCause,
		UnknownOutcomes:        ot.Unknown,
		BurstExcess:            results.BurstExcess{Tokens: ot.BurstExcess, WorstTokens: ot.WorstExcess},
		Bound:                  results.Bound{Sources: map[string]float64{}},
	}
	if ot.WorstKey >= 0 && keyName != nil {
		o.BurstExcess.WorstKey = keyName(ot.WorstKey)
	}
	return o
}
