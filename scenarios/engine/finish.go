package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ratelab/results"
	"ratelab/scenarios/check"
	"ratelab/scenarios/faults"
)

// Finish completes a driver's measurement with what the session knows and writes the run
// directory's summary.json, latency histogram and (when m has them) keys.csv: the environment,
// the faults with their detection and recovery (from m's rows), the store's operations,
// redirects and per-node counts, the hot keys' nodes, what leases and tariffs did, and the SLO
// verdict. It stops the faults first, and deletes an external run's keys.
func (s *Session) Finish(ctx context.Context, m *Measured) (*Result, error) {
	if m == nil {
		return nil, errors.New("finish: nothing was measured")
	}
	s.faults.Stop()
	sum := m.Summary
	if sum.Overspend.Bound.Sources == nil {
		sum.Overspend.Bound.Sources = map[string]float64{}
	}
	sum.Scenario, sum.Seed = s.Spec.Name, int64(s.Spec.Seed)
	sum.Environment = s.env
	sum.Part = partSummary(s.opts.Part)
	if s.store != nil {
		s.store.fillSummary(ctx, sum, m.Ran)
	}
	s.fillLeases(sum)
	if s.regions != nil {
		sum.Regions = s.regions.summary(m.Ran)
	}
	if s.faults != nil {
		sum.Faults = s.faults.Recorded()
		faults.MeasureRecovery(sum.Faults, m.Rows)
	}
	s.fillBound(sum)
	if tb, err := s.tokensBack(ctx); err != nil {
		s.logf("%v", err)
		sum.Load.AddNote(results.NoteTokensBack, err.Error())
	} else {
		sum.TokensBack = tb
	}
	sum.Overspend.JudgeBound()
	var cleanupErr error
	if s.store != nil {
		cleanupErr = s.store.cleanup()
	}
	s.addNotes(&sum.Load)
	sum.SLO = s.Spec.SLO.Evaluate(sum)
	res := &Result{Dir: s.Dir, Summary: sum}
	if m.Keys != nil {
		if err := writeLedger(s.Dir, m.Keys); err != nil {
			return res, err
		}
	}
	if err := results.WriteRunFiles(s.Dir, sum, m.Hist); err != nil {
		return res, err
	}
	return res, cleanupErr
}

// addNotes adds the summary's notes on what the session knows: the two-tier quota, the tariff
// versions, the replay, the external cluster's keys and the part.
func (s *Session) addNotes(l *results.Load) {
	if tc, ok := s.checker.(*check.TwoTier); ok {
		over, denied := tc.QuotaTotals()
		l.AddNote(results.NoteTwoTier, fmt.Sprintf("two tiers: quota %d per %s per tenant; %d allowed requests beyond the quota (in overspend), %d denials the full quota explains",
			s.Spec.Policy.Quota.Limit, time.Duration(s.Spec.Policy.Quota.Window), over, denied))
	}
	if s.tariffs != nil {
		l.AddNote(results.NoteTariffs, s.tariffs.note(time.Unix(0, s.marks.baseNs.Load())))
	}
	if rp := s.replay; rp != nil {
		l.AddNote(results.NoteReplay, fmt.Sprintf("replay of %s at speed %g (%d requests, %d tenants)", rp.path, rp.speed, len(rp.tr.Records), len(rp.tenants)))
	}
	if s.store != nil {
		l.AddNote(results.NoteExternal, s.store.note)
	}
	l.AddNote(results.NotePart, partNote(s.opts.Part))
}

// fillLeases notes what the lease layer did: how many tokens expired or were dropped unused
// (availability lost), the most one gateway held at once, and how many decisions waited for a
// central round trip. The bound they set is fillBound's.
func (s *Session) fillLeases(sum *results.Summary) {
	if len(s.leases) == 0 {
		return
	}
	var outstanding, gatewayMax, lost, calls, waited, refreshes, refreshErrs int64
	for _, l := range s.leases {
		outstanding += l.Outstanding()
		gatewayMax = max(gatewayMax, l.OutstandingMax())
		lost += l.LostTokens()
		calls += l.CentralCalls()
		waited += l.Waited()
		refreshes += l.Refreshes()
		refreshErrs += l.RefreshErrors()
	}
	decisions := max(sum.Load.Decisions, 1)
	sum.Load.AddNote(results.NoteLeases, fmt.Sprintf("leases: %d gateways, %d central lease fetches (%.4f per decision, %.0fx fewer than one per decision), %d tokens expired unused, %d outstanding at the end, at most %d at once over all keys in one gateway",
		len(s.leases), calls, float64(calls)/float64(decisions), float64(decisions)/float64(max(calls, 1)), lost, outstanding, gatewayMax))
	sum.Load.AddNote(results.NoteLeases, fmt.Sprintf("%d decisions (%.2f%%) waited for a lease fetch, %d refresh-ahead fetches (%d failed)",
		waited, 100*float64(waited)/float64(decisions), refreshes, refreshErrs))
}

// writeLedger writes keys.csv into dir.
func writeLedger(dir string, keys []results.KeyCount) error {
	f, err := os.Create(filepath.Join(dir, results.LedgerFile))
	if err != nil {
		return err
	}
	if err := results.WriteLedger(f, keys); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", results.LedgerFile, err)
	}
	return f.Close()
}

// leaseHeld is the most tokens outstanding in one key's leases at any moment (the gateways'
// KeyOutstandingMax, summed per key): the worst key's, and the sum over keys. With one gateway
// each key's figure is exact; with several it is the sum of each gateway's most on the key, which
// bounds the most they held at once and equals it when they all held their most together.
func (s *Session) leaseHeld() (worst, all int64) {
	perKey := map[string]int64{}
	for _, l := range s.leases {
		l.KeyOutstandingMax(func(key string, most int64) { perKey[key] += most })
	}
	for _, n := range perKey {
		worst = max(worst, n)
		all += n
	}
	return worst, all
}

// maxCost is the largest cost a request of the run has: a replay's largest, else 1.
func (s *Session) maxCost() int64 {
	c := int64(1)
	if s.replay != nil {
		for _, r := range s.replay.tr.Records {
			c = max(c, int64(r.Cost))
		}
	}
	return c
}

// debitTokens is the most tokens one script call debits: a lease grant's (max(size, cost)) in
// lease mode, else the largest cost.
func (s *Session) debitTokens() int64 {
	if len(s.leases) > 0 {
		return max(s.Spec.Limiter.Lease.Size, s.maxCost())
	}
	return s.maxCost()
}
