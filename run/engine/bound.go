package engine

import (
	"fmt"
	"time"

	"ratelab/results"
	"ratelab/run/faults"
	"ratelab/scenarios"
)

// bound assembles the overspend bound from its sources, each per key (Sources: the bound on the
// worst key's burst excess) and summed over keys (AllKeys): the most tokens outstanding in
// leases (lp) and what the faults may return (fs). A source the run has but could not measure —
// a replication gap that could not be read, what a fail policy let through (failedOpen
// requests), a gateway clock set off — is listed in Unmeasured with the reason, never counted as
// 0. Overspend.JudgeBound then judges it.
func (s *Session) bound(lp leaseSummary, fs faults.Summary, failedOpen int64) results.Bound {
	b := results.Bound{Sources: map[string]float64{}}
	all := map[string]float64{}
	add := func(source string, perKey, allKeys float64) {
		b.Sources[source] += perKey
		all[source] += allKeys
	}
	if lp.gateways > 0 {
		add(results.BoundLeases, float64(lp.worst), float64(lp.all))
	}
	for name, t := range fs.Sources {
		add(name, t, t) // a fault cannot return more to one key than in all
	}
	b.Unmeasured = append(b.Unmeasured, fs.Unmeasured...)
	if failedOpen > 0 {
		b.Unmeasured = append(b.Unmeasured, results.Unmeasured{Source: results.BoundFailOpen,
			Reason: fmt.Sprintf("%d requests were let through by a fail policy while the store failed; no bound is derived for what they add to a key's excess", failedOpen)})
	}
	for _, f := range s.Spec.Faults {
		if f.Kind == scenarios.FaultClockSkew {
			b.Unmeasured = append(b.Unmeasured, results.Unmeasured{Source: results.BoundClockSkew,
				Reason: fmt.Sprintf("clock-skew of %s by %s at %s: no bound is derived for what a gateway clock set off lets the store refill early", orAll(f.Target), time.Duration(f.Offset), time.Duration(f.At))})
		}
	}
	if len(all) > 0 {
		b.AllKeys = &results.BoundSum{Sources: all}
	}
	return b
}

// orAll is a gateway fault's target as written, "all" when empty.
func orAll(target string) string {
	if target == "" {
		return "all"
	}
	return target
}
