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
		var bound float64
		sum.Faults, bound = s.faults.Recorded()
		if bound > 0 {
			sum.Overspend.Bound.Sources[results.BoundReplicationGap] += bound
		}
		faults.MeasureRecovery(sum.Faults, m.Rows)
	}
	if tb, err := s.tokensBack(ctx); err != nil {
		s.logf("%v", err)
		sum.Load.Note += "; " + err.Error()
	} else {
		sum.TokensBack = tb
	}
	sum.Overspend.JudgeBound()
	var cleanupErr error
	if s.store != nil {
		cleanupErr = s.store.cleanup()
	}
	sum.Load.Note += s.notes()
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

// notes are the summary's notes on what the session knows: the two-tier quota, the tariff
// versions, the replay, the external cluster's keys and the part.
func (s *Session) notes() string {
	var n string
	if tc, ok := s.checker.(*check.TwoTier); ok {
		over, denied := tc.QuotaTotals()
		n += fmt.Sprintf("; two tiers: quota %d per %s per tenant; %d allowed requests beyond the quota (in overspend), %d denials the full quota explains",
			s.Spec.Policy.Quota.Limit, time.Duration(s.Spec.Policy.Quota.Window), over, denied)
	}
	if s.tariffs != nil {
		n += "; " + s.tariffs.note(time.Unix(0, s.marks.baseNs.Load()))
	}
	if rp := s.replay; rp != nil {
		n += fmt.Sprintf("; replay of %s at speed %g (%d requests, %d tenants)", rp.path, rp.speed, len(rp.tr.Records), len(rp.tenants))
	}
	if s.store != nil && s.store.note != "" {
		n += "; " + s.store.note
	}
	return n + partNote(s.opts.Part)
}

// fillLeases reports what the lease layer did: the bound on the burst excess is the most tokens
// outstanding in the leases, and the note says how many tokens expired or were dropped unused
// (availability lost) and how many decisions waited for a central round trip.
func (s *Session) fillLeases(sum *results.Summary) {
	if len(s.leases) == 0 {
		return
	}
	var outstanding, outstandingMax, lost, calls, waited, refreshes, refreshErrs int64
	for _, l := range s.leases {
		outstanding += l.Outstanding()
		outstandingMax += l.OutstandingMax()
		lost += l.LostTokens()
		calls += l.CentralCalls()
		waited += l.Waited()
		refreshes += l.Refreshes()
		refreshErrs += l.RefreshErrors()
	}
	sum.Overspend.Bound.Sources[results.BoundLeases] += s.leaseBound()
	decisions := max(sum.Load.Decisions, 1)
	sum.Load.Note += fmt.Sprintf("; leases: %d gateways, %d central lease fetches (%.4f per decision, %.0fx fewer than one per decision), %d tokens expired unused, %d outstanding at the end, at most %d at once over all keys",
		len(s.leases), calls, float64(calls)/float64(decisions), float64(decisions)/float64(max(calls, 1)), lost, outstanding, outstandingMax)
	sum.Load.Note += fmt.Sprintf("; %d decisions (%.2f%%) waited for a lease fetch, %d refresh-ahead fetches (%d failed)",
		waited, 100*float64(waited)/float64(decisions), refreshes, refreshErrs)
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

// leaseBound is what leases promise of one key's burst excess: a key can hold at most one lease
// per gateway, of at most the lease size (or, for a request costing more, its cost), so
// gateways x max(size, largest cost) tokens outstanding at any moment — all of which the
// gateways may spend at once on top of a full bucket.
func (s *Session) leaseBound() float64 {
	size := s.Spec.Limiter.Lease.Size
	if s.replay != nil {
		for _, r := range s.replay.tr.Records {
			size = max(size, int64(r.Cost))
		}
	}
	return float64(int64(len(s.leases)) * size)
}
