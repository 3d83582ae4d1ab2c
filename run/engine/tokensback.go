package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/faults"
)

// clientDebits is the clients' side of tokens back: per key, the tokens the store allowed (the
// decisions the clients saw allowed by the store itself, not by a fail policy or a lease) and
// the tokens of calls the store may have debited unseen (the records' unknown outcomes). After
// the run it is compared with the debit audit the cluster kept (limiter.audit).
type clientDebits struct {
	tenants   map[string]int // tenant name -> dense index
	endpoints map[string]int
	nEp       int
	allowed   []atomic.Int64
	unknown   []atomic.Int64
	names     func(key int) string // key k's audit counter (limiter.AuditKey)
	// run names this run's audit counters (limiter.WithAudit): a run on a cluster an earlier
	// run used reads its own counters, never the earlier run's debits as its own.
	run string
}

// newClientDebits returns the client debits of a run whose audit counters are named run.
func newClientDebits(tenants, endpoints []string, run string) *clientDebits {
	n := len(endpoints)
	keyName := func(k int) string { return limiter.AuditKey(tenants[k/n], endpoints[k%n], run) }
	b := &clientDebits{tenants: map[string]int{}, endpoints: map[string]int{}, nEp: len(endpoints), names: keyName, run: run,
		allowed: make([]atomic.Int64, len(tenants)*len(endpoints)), unknown: make([]atomic.Int64, len(tenants)*len(endpoints))}
	for i, t := range tenants {
		b.tenants[t] = i
	}
	for i, e := range endpoints {
		b.endpoints[e] = i
	}
	return b
}

// auditRun is the name of the run's audit counters; "" without client debits (a run whose counters
// are never read: no store, or decisions over HTTP).
func (b *clientDebits) auditRun() string {
	if b == nil {
		return ""
	}
	return b.run
}

// Consume counts r's tokens: those the store itself allowed (not a fail policy or a lease), and
// those of a call the store may have debited unseen (Record.MayHaveDebited: a timeout, a
// connection lost after the write, an allowed decision's short WAIT, a fail policy's answer to
// one).
func (b *clientDebits) Consume(r *Record) {
	switch {
	case r.MayHaveDebited:
		b.unknown[r.Key].Add(r.Cost)
	case r.Outcome == OutcomeAllowed && r.Decision.Source == limiter.Central:
		b.allowed[r.Key].Add(r.Cost)
	}
}

// slotAllowed sums the allowed tokens so far per slot (a tenant's keys share its slot).
func (b *clientDebits) slotAllowed() map[int]int64 {
	out := map[int]int64{}
	for k := range b.allowed {
		if n := b.allowed[k].Load(); n > 0 {
			out[cluster.KeySlot(b.names(k))] += n
		}
	}
	return out
}

// backCounts are one key's three figures.
type backCounts struct{ allowed, debited, unknown int64 }

// countBack compares, key by key, the tokens the clients saw allowed with the debits the
// cluster kept, and returns the range of tokens lost.
//
// A debit is lost when the primary that made it goes away before its replica applied it. The
// audit counts every debit the surviving state holds: the allowed decisions' that survived, and
// those of unknown outcomes that did debit and survived. So lost = allowed - (debited - u),
// where u (0 <= u <= unknown) is the unknown outcomes' surviving debits:
//
//   - Min takes u = 0: max(0, allowed - debited). A timed-out call that did debit makes the
//     server's count larger and hides a lost debit, so Min is what is certainly lost;
//   - Max takes u = unknown, capped at allowed (no key loses more than it was allowed).
//
// ByFault gives each key's Min to the latest fault that took its slot's primary away (losses,
// in the order they happened): a debit is lost with the primary that acknowledged it, whatever
// fault was active when the tokens were allowed (a kill loses the debits made just before it).
// A key no such fault touched goes under "none": a loss without a fault is the audit's defect.
func countBack(counts []backCounts, slotOf func(key int) int, losses []faults.Loss) results.TokensBack {
	tb := results.TokensBack{ByFault: map[string]int64{}}
	for k, c := range counts {
		lo := max(0, c.allowed-c.debited)
		hi := min(c.allowed, max(0, c.allowed-c.debited+c.unknown))
		tb.Min += lo
		tb.Max += hi
		if lo == 0 {
			continue
		}
		tb.Keys++
		cause := "none"
		slot := slotOf(k)
		for _, l := range losses {
			if l.Covers(slot) {
				cause = l.Fault
			}
		}
		tb.ByFault[cause] += lo
	}
	for _, l := range losses {
		tb.Bound += l.Bound
	}
	tb.JudgeBound()
	if len(tb.ByFault) == 0 {
		tb.ByFault = nil
	}
	return tb
}

// settleWait bounds the wait for a healthy cluster before the audit is read.
const settleWait = time.Minute

// backSummary is tokens back's piece of the summary: the tokens the faults' losses returned
// (tokensBack), or a note saying why they could not be counted.
func (s *Session) backSummary(ctx context.Context, losses []faults.Loss) (*results.TokensBack, []results.Note) {
	tb, err := s.tokensBack(ctx, losses)
	if err != nil {
		s.logf("%v", err)
		return nil, []results.Note{{Kind: results.NoteTokensBack, Text: err.Error()}}
	}
	return tb, nil
}

// tokensBack reads every key's debit audit from the primaries, once the faults are stopped (a
// partition healed) and the cluster is healthy, and counts the tokens losses returned; nil when
// the run does not audit its buckets, with an error when the audit cannot be read.
func (s *Session) tokensBack(ctx context.Context, losses []faults.Loss) (*results.TokensBack, error) {
	if s.back == nil || s.store == nil {
		return nil, nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleWait)
	defer cancel()
	if err := s.store.cl.WaitHealthy(wctx); err != nil {
		return nil, fmt.Errorf("tokens back: the cluster is not healthy after the run, the audit cannot be read: %w", err)
	}
	s.store.client.ReloadState(wctx)
	n := len(s.back.allowed)
	keys := make([]int, 0, n)
	for k := range n {
		if s.back.allowed[k].Load() > 0 || s.back.unknown[k].Load() > 0 {
			keys = append(keys, k)
		}
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = s.back.names(k)
	}
	debited, err := limiter.ReadDebited(wctx, s.store.client, names)
	if err != nil {
		return nil, fmt.Errorf("tokens back: reading the debit audit: %w", err)
	}
	counts := make([]backCounts, len(keys))
	for i, k := range keys {
		counts[i] = backCounts{allowed: s.back.allowed[k].Load(), debited: debited[i], unknown: s.back.unknown[k].Load()}
	}
	tb := countBack(counts, func(i int) int { return cluster.KeySlot(names[i]) }, losses)
	s.logf("tokens back: %d..%d tokens over %d keys (bound %.1f; audit counters of run %s)", tb.Min, tb.Max, tb.Keys, tb.Bound, s.back.run)
	return &tb, nil
}
