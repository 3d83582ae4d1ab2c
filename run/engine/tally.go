package engine

import (
	"sort"
	"sync"
	"sync/atomic"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/check"
)

// hotKeyCount is how many of the busiest keys the summary lists.
const hotKeyCount = 10

// tally counts completed requests per key (the hot keys, the slots a reshard moves, keys.csv) and,
// for keys.csv, overspend per key. It consumes the run's records.
type tally struct {
	tenants, endpoints []string
	completed          []atomic.Int64 // by key
	// over is touched only on an overspend verdict, so the common decision pays nothing for it.
	mu   sync.Mutex
	over map[int]keyOver
}

// keyOver is one key's overspend: requests and the tokens they cost (a trace may give a request
// a cost above one).
type keyOver struct{ requests, tokens int64 }

func newTally(tenants, endpoints []string) *tally {
	return &tally{tenants: tenants, endpoints: endpoints, completed: make([]atomic.Int64, len(tenants)*len(endpoints))}
}

// Consume counts r, and its cost when it overspent.
func (t *tally) Consume(r *Record) {
	t.completed[r.Key].Add(1)
	if r.Verdict != check.Overspend {
		return
	}
	t.mu.Lock()
	if t.over == nil {
		t.over = map[int]keyOver{}
	}
	o := t.over[r.Key]
	o.requests++
	o.tokens += r.Cost
	t.over[r.Key] = o
	t.mu.Unlock()
}

// keyName is key's Redis key (without a run's external prefix).
func (t *tally) keyName(key int) string {
	n := len(t.endpoints)
	return limiter.KeyFor(t.tenants[key/n], t.endpoints[key%n])
}

// slotTraffic sums the decisions so far per slot (a tenant's keys share its slot).
func (t *tally) slotTraffic() map[int]int64 {
	out := map[int]int64{}
	nEp := len(t.endpoints)
	for i, name := range t.tenants {
		var n int64
		for e := 0; e < nEp; e++ {
			n += t.completed[i*nEp+e].Load()
		}
		if n > 0 {
			out[cluster.KeySlot(name)] += n
		}
	}
	return out
}

// hotKeys lists the busiest keys by decisions, with their share of all decisions.
func (t *tally) hotKeys() []results.HotKey {
	counts := make([]int64, len(t.completed))
	for k := range t.completed {
		counts[k] = t.completed[k].Load()
	}
	return HotKeys(counts, t.keyName)
}

// HotKeys lists the hotKeyCount busiest keys of counts (completed requests by key), with their
// share of all; name gives a key's Redis key.
func HotKeys(counts []int64, name func(key int) string) []results.HotKey {
	var all int64
	idx := make([]int, 0, len(counts))
	for k, n := range counts {
		all += n
		if n > 0 {
			idx = append(idx, k)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return counts[idx[i]] > counts[idx[j]] })
	out := make([]results.HotKey, 0, min(len(idx), hotKeyCount))
	for _, k := range idx[:min(len(idx), hotKeyCount)] {
		out = append(out, results.HotKey{Key: name(k), Share: results.Ratio(counts[k], all)})
	}
	return out
}

// lines lists every key that took a decision, in key order (tenant rank, then endpoint).
func (t *tally) lines() []results.KeyTally {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []results.KeyTally{}
	for k := range t.completed {
		n := t.completed[k].Load()
		if n == 0 {
			continue
		}
		over := t.over[k]
		out = append(out, results.KeyTally{Key: t.keyName(k), Completed: n, Overspend: over.requests, OverspendTokens: over.tokens})
	}
	return out
}
