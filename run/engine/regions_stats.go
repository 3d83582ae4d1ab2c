package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// regionStats is one region's account: what was offered to it (the dispatcher counts, dropped
// included) and its records, booked as the run's are (Account), plus the decisions by the
// limiter within the latency budget.
type regionStats struct {
	offered   atomic.Int64
	cross     atomic.Int64 // calls to another region: decisions (global), reports and updates (rebalance)
	mu        sync.Mutex
	st        Account
	available int64
}

func (st *regionStats) init() { st.st = Account{hist: results.NewHistogram()} }

// consume books r in its region's account; the driver calls it after the judge, so the verdict
// is set. A decision from a region other than home crosses to the home cluster in design
// global: it counts as a cross-region call, answered or not.
func (rr *regionRun) consume(r *Record) {
	rg := rr.regions[r.Region]
	if rr.design == scenarios.DesignGlobal && r.Region != 0 {
		rg.stats.cross.Add(1)
	}
	if k, ok := r.StoreFailure(); ok && rg.st != nil {
		rg.st.trouble(k)
	}
	st := &rg.stats
	// A decision by the limiter (no error, no fail policy's answer) within the budget.
	byLimiter := (r.Outcome == OutcomeAllowed || r.Outcome == OutcomeDenied) && !r.Decision.Failure.Failed
	st.mu.Lock()
	st.st.Book(r)
	if byLimiter && r.Latency <= rr.budget {
		st.available++
	}
	st.mu.Unlock()
}

// summary is the run's account per region, over ran of schedule: the same figures, by the same
// functions, as the run's; nil for a run without regions.
func (rr *regionRun) summary(ran time.Duration) *results.Regions {
	if rr == nil {
		return nil
	}
	out := &results.Regions{
		Design: rr.design, Home: rr.names[0],
		RTTMs: ms(rr.rtt), JitterMs: ms(rr.jitter), BudgetMs: ms(rr.budget),
	}
	if rr.reb != nil {
		out.PeriodS = rr.reb.period.Seconds()
	}
	var cross int64
	for _, rg := range rr.regions {
		st := &rg.stats
		st.mu.Lock()
		t := &st.st
		g := results.Region{
			Name: rg.name, Offered: st.offered.Load(),
			Allowed: t.allowed, Denied: t.denied, FailedOpen: t.failOpen, FailedClosed: t.failClosed, Errors: t.Errors(),
			Overspend: t.overspend, FalseDenies: t.falseDenies, CrossRegionCalls: st.cross.Load(),
		}
		lat, _ := results.LatencyOf(t.hist, g.Offered-t.Decided())
		g.P50Ms, g.P99Ms = lat.P50, lat.P99
		g.Availability = results.Ratio(st.available, g.Offered)
		st.mu.Unlock()
		cross += g.CrossRegionCalls
		out.List = append(out.List, g)
	}
	if ran > 0 {
		out.CrossRegionCallsPerS = float64(cross) / ran.Seconds()
	}
	return out
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
