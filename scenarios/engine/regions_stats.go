package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/check"
)

// regionStats is one region's account: what was offered to it (the dispatcher counts, dropped
// included) and what its gateways decided (the region consumer counts).
type regionStats struct {
	offered                                                    atomic.Int64
	cross                                                      atomic.Int64 // calls to another region: decisions (global), reports and updates (rebalance)
	mu                                                         sync.Mutex
	hist                                                       *results.Histogram
	allowed, denied, errors, available, overspend, falseDenies int64
}

func (st *regionStats) init() { st.hist = results.NewHistogram() }

// consumeRegion books r in its region's account; the driver calls it after the judge, so the
// verdict is set. A decision from a region other than home crosses to the home cluster in
// design global: it counts as a cross-region call, answered or not.
func (rr *regionRun) consume(r *Record) {
	rg := rr.regions[r.Region]
	if rr.design == scenarios.DesignGlobal && r.Region != 0 {
		rg.stats.cross.Add(1)
	}
	if r.Err != nil && rg.st != nil {
		rg.st.trouble(r.ErrKind)
	}
	st := &rg.stats
	// A decision by the limiter (no error, no fail policy's answer) within the budget.
	byLimiter := r.Err == nil && r.Decision.Source == limiter.Central
	st.mu.Lock()
	defer st.mu.Unlock()
	st.hist.Record(r.Latency)
	switch {
	case r.Err != nil:
		st.errors++
		return
	case !byLimiter:
		st.errors++ // a fail policy's answer, counted as allowed or denied too
	case r.Latency <= rr.budget:
		st.available++
	}
	if r.Decision.Allowed {
		st.allowed++
	} else {
		st.denied++
	}
	switch r.Verdict {
	case check.Overspend:
		st.overspend++
	case check.FalseDeny:
		st.falseDenies++
	}
}

// summary is the run's account per region, over ran of schedule.
func (rr *regionRun) summary(ran time.Duration) *results.Regions {
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
		g := results.Region{
			Name: rg.name, Offered: st.offered.Load(),
			Allowed: st.allowed, Denied: st.denied, Errors: st.errors,
			P50Ms: results.Ms(st.hist.QuantileMs(50)), P99Ms: results.Ms(st.hist.QuantileMs(99)),
			Overspend: st.overspend, FalseDenies: st.falseDenies, CrossRegionCalls: st.cross.Load(),
		}
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
