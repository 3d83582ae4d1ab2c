package engine

import (
	"math/rand/v2"
	"sync"
	"time"
)

// The rebalance rule. Every period each region reports to the home region how many requests
// each tenant sent it in the period (one call per region, after rtt/2 ± jitter); once the
// reports are in, the rebalancer sets each tenant's share in each reporting region to
//
//	next_r = smoothing x target_r + (1 - smoothing) x held_r,   target_r = free x demand_r / demand
//
// where demand is the tenant's requests over the reporting regions and free is 1 minus the
// shares held by the regions that did not report (cut off: their shares freeze, and the others
// share what is left). Each next_r is raised to at least rebalanceFloor and the reporting
// regions' shares are scaled back to sum to free, so no region drops to zero (a region that
// saw none of a tenant's traffic keeps a few tokens for its first requests) and the shares
// never add up to more than the tenant's one quota. A tenant with no requests in the period
// keeps its shares. The home region applies the new shares at once, the others when the
// update reaches them (one call each, after rtt/2 ± jitter); while updates travel, two regions
// may briefly hold the old and the new share, which the global envelope judges like any other
// excess.
const (
	rebalanceSmoothing = 0.5
	rebalanceFloor     = 0.05
)

// rebalancer is design rebalance's loop in the home region.
type rebalancer struct {
	rr     *regionRun
	period time.Duration
	// held is each region's current shares per tenant as the rebalancer knows them: what it
	// sent and the region could receive.
	held     [][]float64
	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}
	started  bool
}

func newRebalancer(rr *regionRun, period time.Duration) *rebalancer {
	b := &rebalancer{rr: rr, period: period, stopCh: make(chan struct{}), done: make(chan struct{})}
	b.held = make([][]float64, len(rr.regions))
	for r := range b.held {
		b.held[r] = make([]float64, rr.quota.tenants)
		for t := range b.held[r] {
			b.held[r][t] = rr.quota.get(r, t)
		}
	}
	return b
}

// start runs a round every period from base until stop.
func (b *rebalancer) start(base time.Time) {
	b.started = true
	go func() {
		defer close(b.done)
		for k := 1; ; k++ {
			t := time.NewTimer(time.Until(base.Add(time.Duration(k) * b.period)))
			select {
			case <-b.stopCh:
				t.Stop()
				return
			case <-t.C:
			}
			b.round()
		}
	}()
}

// stop ends the loop and waits for it (updates already in flight may still land).
func (b *rebalancer) stop() {
	b.stopOnce.Do(func() { close(b.stopCh) })
	if b.started {
		<-b.done
	}
}

// oneWay is one direction's delay between two regions.
func (rr *regionRun) oneWay() time.Duration {
	d := rr.rtt / 2
	if rr.jitter > 0 {
		d += time.Duration(rand.Int64N(2*int64(rr.jitter)+1)) - rr.jitter
	}
	return max(d, 0)
}

// reachable reports whether region r and the home region can call each other.
func (rr *regionRun) reachable(r int) bool {
	return r == 0 || (!rr.regions[r].cut.Load() && !rr.regions[0].cut.Load())
}

// round is one period: the reports, the new shares, the updates.
func (b *rebalancer) round() {
	rr := b.rr
	n := len(rr.regions)
	counts := make([][]int64, n)
	reported := make([]bool, n)
	var wait time.Duration
	for r, rg := range rr.regions {
		counts[r] = make([]int64, len(rg.demand))
		for t := range rg.demand {
			counts[r][t] = rg.demand[t].Swap(0)
		}
		if reported[r] = rr.reachable(r); reported[r] && r != 0 {
			rg.stats.cross.Add(1)
			wait = max(wait, rr.oneWay())
		}
	}
	t := time.NewTimer(wait)
	select {
	case <-b.stopCh:
		t.Stop()
		return
	case <-t.C:
	}
	next := b.shares(counts, reported)
	for r, rg := range rr.regions {
		if !reported[r] || !rr.reachable(r) {
			continue
		}
		copy(b.held[r], next[r])
		apply := func() {
			for t, v := range next[r] {
				rr.quota.set(r, t, v)
			}
		}
		if r == 0 {
			apply()
			continue
		}
		rg.stats.cross.Add(1)
		time.AfterFunc(rr.oneWay(), apply)
	}
}

// shares applies the rebalance rule to one period's counts: the new shares of the regions that
// reported (the others' rows are nil).
func (b *rebalancer) shares(counts [][]int64, reported []bool) [][]float64 {
	n := len(counts)
	next := make([][]float64, n)
	for r := range next {
		if reported[r] {
			next[r] = append([]float64(nil), b.held[r]...)
		}
	}
	for t := range b.held[0] {
		var demand int64
		free := 1.0
		for r := range n {
			if reported[r] {
				demand += counts[r][t]
			} else {
				free -= b.held[r][t]
			}
		}
		if demand == 0 {
			continue
		}
		var sum float64
		for r := range n {
			if !reported[r] {
				continue
			}
			target := free * float64(counts[r][t]) / float64(demand)
			v := max(rebalanceSmoothing*target+(1-rebalanceSmoothing)*b.held[r][t], rebalanceFloor)
			next[r][t] = v
			sum += v
		}
		for r := range n {
			if reported[r] && sum > 0 {
				next[r][t] *= max(free, 0) / sum
			}
		}
	}
	return next
}
