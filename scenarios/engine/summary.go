package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios"
)

// hotKeyCount is how many of the busiest keys the summary lists.
const hotKeyCount = 10

// interval turns one second's stats into its timeseries row.
func (d *driver) interval(sec int, s *secStats) results.Interval {
	iv := results.Interval{
		TS:           float64(sec),
		Offered:      d.offered[sec].Load(),
		Sent:         d.sent[sec].Load(),
		Dropped:      d.dropped[sec].Load(),
		Allowed:      s.allowed,
		Denied:       s.denied,
		FailedOpen:   s.failOpen,
		FailedClosed: s.failClosed,
		Errors:       s.errors(),
		Timeout:      s.errs[limiter.KindTimeout],
		ClusterDown:  s.errs[limiter.KindClusterDown],
		TryAgain:     s.errs[limiter.KindTryAgain],
		Conn:         s.errs[limiter.KindConn],
		Other:        s.errs[limiter.KindOther],
		Overspend:    s.overspend,
		Faults:       d.faultsAt[sec].Load(),
		// Provisional false denies withdrawn as reordering so far; later withdrawals are only
		// in the summary.
		FalseDenies: max(0, s.falseDenies-d.withdrawn[sec].Load()),
	}
	if d.redirects != nil {
		// The node hooks saw every MOVED/ASK/NOSCRIPT reply: the ones go-redis followed or the
		// limiter answered with EVAL, and the ones that ended a decision.
		iv.Moved = d.redirects.moved[sec].Load()
		iv.Ask = d.redirects.ask[sec].Load()
		iv.NoScript = d.redirects.noscript[sec].Load()
	} else {
		iv.Moved = s.errs[limiter.KindMoved]
		iv.Ask = s.errs[limiter.KindAsk]
		iv.NoScript = s.errs[limiter.KindNoScript]
	}
	// Store failures a fail policy answered: not decision errors, but errors of the store.
	iv.Timeout += d.storeErrs[limiter.KindTimeout][sec].Load()
	iv.ClusterDown += d.storeErrs[limiter.KindClusterDown][sec].Load()
	iv.TryAgain += d.storeErrs[limiter.KindTryAgain][sec].Load()
	iv.Conn += d.storeErrs[limiter.KindConn][sec].Load()
	iv.Other += d.storeErrs[limiter.KindOther][sec].Load()
	if d.central {
		iv.CentralOps = s.allowed + s.denied + s.errors()
	}
	if d.tariffs != nil {
		iv.PolicyVersion = d.tariffs.versionAt(d.base.Add(time.Duration(sec+1) * time.Second))
	}
	if s.hist.Count() > 0 {
		iv.P50Ms = s.hist.QuantileMs(50)
		iv.P90Ms = s.hist.QuantileMs(90)
		iv.P99Ms = s.hist.QuantileMs(99)
		iv.P999Ms = s.hist.QuantileMs(99.9)
		iv.MaxMs = s.hist.MaxMs()
	}
	return iv
}

// versionAt returns the version of the tariffs that was live at t: the last change recorded at
// or before t. A row is written after its second ends, so every change inside the second has
// been recorded by then; reading the cache's current version instead would also count a reload
// that happened while the row waited for its last decisions.
func (tr *tariffRun) versionAt(t time.Time) int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	v := tr.first
	for _, c := range tr.changes {
		if c.at.After(t) {
			break
		}
		v = c.to
	}
	return v
}

// achievedFloor is the share of the offered rate below which a run is called generator-limited.
const achievedFloor = 0.99

func fillSummary(sum *results.Summary, spec *scenarios.Spec, d *driver, t *secStats, ran time.Duration, offered, sent, dropped, behind int64) {
	secs := ran.Seconds()
	decisions := t.allowed + t.denied + t.failOpen + t.failClosed + t.errors()
	sum.Load = results.Load{
		Decisions:   decisions,
		Sent:        sent,
		Dropped:     dropped,
		MaxInflight: spec.Load.MaxInflight,
		Concurrency: spec.Load.Concurrency,
	}
	if secs > 0 {
		sum.Load.OfferedRPS = float64(offered) / secs
		sum.Load.AchievedRPS = float64(decisions) / secs
	}
	lagP99 := d.lag.QuantileMs(99)
	sum.Load.ScheduleLagP99Ms = lagP99
	var notes []string
	if offered > 0 && float64(decisions) < achievedFloor*float64(offered) {
		sum.Load.GeneratorLimited = true
		notes = append(notes, fmt.Sprintf("achieved %.0f of %.0f requests/s offered (%.1f%%): the numbers describe this machine at this load, not the limiter's ceiling",
			sum.Load.AchievedRPS, sum.Load.OfferedRPS, 100*float64(decisions)/float64(offered)))
	}
	if n := dropped - behind; n > 0 {
		notes = append(notes, fmt.Sprintf("%d requests dropped because %d were already in flight (load.max_inflight): decisions were slower than the offered rate", n, spec.Load.MaxInflight))
	}
	if behind > 0 {
		notes = append(notes, fmt.Sprintf("%d requests dropped because the generator fell more than %s behind its schedule (CPU-bound)", behind, maxScheduleLag))
	}
	notes = append(notes, fmt.Sprintf("schedule lag p99 %.3f ms (time from intended start to dispatch; counted in latency)", lagP99))
	sum.Load.Note = strings.Join(notes, "; ")

	sum.Outcomes = results.Outcomes{
		Allowed: t.allowed, Denied: t.denied, FailedOpen: t.failOpen, FailedClosed: t.failClosed, Errors: t.errors(),
	}
	// Decision errors, plus store failures that a fail policy turned into decisions: both are
	// errors of the store.
	for k, n := range t.errs {
		addError(&sum.Errors, limiter.ErrorKind(k), n)
	}
	for k := range d.storeErrs {
		for i := range d.storeErrs[k] {
			addError(&sum.Errors, limiter.ErrorKind(k), d.storeErrs[k][i].Load())
		}
	}
	if t.hist.Count() > 0 {
		sum.LatencyMs = results.Latency{
			P50: t.hist.QuantileMs(50), P90: t.hist.QuantileMs(90), P99: t.hist.QuantileMs(99),
			P999: t.hist.QuantileMs(99.9), Max: t.hist.MaxMs(),
		}
	}
	ot := d.checker.Totals()
	allowed := t.allowed + t.failOpen
	sum.Overspend = results.Overspend{
		Requests:        ot.OverspendRequests,
		Tokens:          ot.OverspendTokens,
		Ratio:           results.Ratio(ot.OverspendRequests, allowed),
		FalseDenies:     ot.FalseDenies,
		FalseDenyRatio:  results.Ratio(ot.FalseDenies, t.denied+t.failClosed),
		ByCause:         ot.ByCause,
		UnknownOutcomes: ot.Unknown,
	}
}

// addError adds n errors of kind k to e.
func addError(e *results.Errors, k limiter.ErrorKind, n int64) {
	switch k {
	case limiter.KindTimeout:
		e.Timeout += n
	case limiter.KindMoved:
		e.Moved += n
	case limiter.KindAsk:
		e.Ask += n
	case limiter.KindTryAgain:
		e.TryAgain += n
	case limiter.KindClusterDown:
		e.ClusterDown += n
	case limiter.KindNoScript:
		e.NoScript += n
	case limiter.KindConn:
		e.Conn += n
	default:
		e.Other += n
	}
}

// fillCentral adds what only a Redis-backed run knows: ops per node and where the hot keys live.
func fillCentral(ctx context.Context, sum *results.Summary, c *redis.ClusterClient, r *redirects, d *driver, tenants, endpoints []string, ran time.Duration) {
	var ops int64
	var byKind [limiter.NumErrorKinds]int64
	nodes := r.snapshot()
	for _, n := range nodes {
		ops += n.ops.Load()
		for k := range n.errs {
			byKind[k] += n.errs[k].Load()
		}
	}
	for _, n := range nodes {
		ns := results.NodeStats{Addr: n.addr, Ops: n.ops.Load(), Share: results.Ratio(n.ops.Load(), ops)}
		ns.Moved, ns.Ask, ns.NoScript = n.errs[limiter.KindMoved].Load(), n.errs[limiter.KindAsk].Load(), n.errs[limiter.KindNoScript].Load()
		ns.Timeout, ns.Conn = n.errs[limiter.KindTimeout].Load(), n.errs[limiter.KindConn].Load()
		ns.TryAgain, ns.ClusterDown = n.errs[limiter.KindTryAgain].Load(), n.errs[limiter.KindClusterDown].Load()
		sum.Nodes = append(sum.Nodes, ns)
	}
	moved, ask, noscript := byKind[limiter.KindMoved], byKind[limiter.KindAsk], byKind[limiter.KindNoScript]
	sum.Central = results.Central{Ops: ops}
	if ran > 0 {
		sum.Central.OpsPerS = float64(ops) / ran.Seconds()
	}
	// Redirects followed inside the cluster client and NOSCRIPT answered with EVAL never surface
	// as decision errors; the node hooks counted them. A MOVED that ended a decision was seen by
	// a hook too, so the hook count replaces the decision count rather than adding to it.
	sum.Errors.Moved = max(sum.Errors.Moved, moved)
	sum.Errors.Ask = max(sum.Errors.Ask, ask)
	sum.Errors.NoScript = max(sum.Errors.NoScript, noscript)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	sum.HotKeys = hotKeys(d, tenants, endpoints, func(key string) string { return nodeOf(ctx, c, key) })
}

// hotKeys lists the busiest keys by decisions, with their share of all decisions.
func hotKeys(d *driver, tenants, endpoints []string, node func(string) string) []results.HotKey {
	type kc struct {
		key int
		n   int64
	}
	var all int64
	top := make([]kc, 0, hotKeyCount+1)
	for k := range d.keyCounts {
		n := d.keyCounts[k].Load()
		all += n
		if n == 0 || (len(top) == hotKeyCount && n <= top[len(top)-1].n) {
			continue
		}
		top = append(top, kc{k, n})
		sort.Slice(top, func(i, j int) bool { return top[i].n > top[j].n })
		if len(top) > hotKeyCount {
			top = top[:hotKeyCount]
		}
	}
	out := make([]results.HotKey, 0, len(top))
	for _, t := range top {
		key := limiter.KeyFor(tenants[t.key/len(endpoints)], endpoints[t.key%len(endpoints)])
		h := results.HotKey{Key: key, Share: results.Ratio(t.n, all)}
		if node != nil {
			h.Node = node(key)
		}
		out = append(out, h)
	}
	return out
}

// nodeOf returns the address of the primary that owns key's slot, or "" if it cannot tell.
func nodeOf(ctx context.Context, c *redis.ClusterClient, key string) string {
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return ""
	}
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return ""
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr
		}
	}
	return ""
}
