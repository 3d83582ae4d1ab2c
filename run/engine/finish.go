package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"ratelab/results"
	"ratelab/run/check"
)

// Finish completes a driver's measurement with what the session knows and writes the run
// directory's summary.json, latency histogram and (when m has them) keys.csv. Each component
// returns its piece — the store its operations, redirects, per-node counts and the hot keys'
// nodes; the leases and the faults their notes, events and bound sources; the regions their
// accounts; tokens back its count — and Finish assembles them once, then judges the bound and
// the SLO. It stops the faults first, and deletes an external run's keys.
func (s *Session) Finish(ctx context.Context, m *Measured) (*Result, error) {
	if m == nil {
		return nil, errors.New("finish: nothing was measured")
	}
	s.faults.Stop()
	sum := m.Summary
	sum.Scenario, sum.Seed = s.Spec.Name, int64(s.Spec.Seed)
	sum.Environment = s.env
	sum.Part = partSummary(s.opts.Part)
	if s.store != nil {
		st := s.store.summary(ctx, m.Ran, sum.HotKeys)
		sum.Nodes, sum.Central, sum.HotKeys, sum.Errors = st.nodes, st.central, st.hotKeys, st.errors(sum.Errors)
	}
	leases := s.leaseSummary(sum.Load.Completed)
	fs := s.faults.Summary(m.Rows)
	sum.Faults = fs.Events
	sum.Regions = s.regions.summary(m.Ran)
	sum.Overspend.Bound = s.bound(leases, fs, sum.Outcomes.FailedOpen)
	tb, backNotes := s.backSummary(ctx, fs.Losses)
	sum.TokensBack = tb
	sum.Overspend.JudgeBound()
	var cleanupErr error
	if s.store != nil {
		cleanupErr = s.store.cleanup()
	}
	for _, n := range slices.Concat(leases.notes, backNotes, s.notes()) {
		sum.Load.AddNote(n.Kind, n.Text)
	}
	sum.SLO = s.Spec.SLO.Evaluate(sum)
	res, err := s.writeRun(sum, m)
	return res, errors.Join(err, cleanupErr)
}

// writeRun writes the run directory's summary.json, latency histogram and keys.csv.
func (s *Session) writeRun(sum *results.Summary, m *Measured) (*Result, error) {
	res := &Result{Dir: s.Dir, Summary: sum}
	if m.Keys != nil {
		if err := writeTally(s.Dir, m.Keys); err != nil {
			return res, err
		}
	}
	return res, results.WriteRunFiles(s.Dir, sum, m.Hist)
}

// notes are the summary's notes on what the session knows: the two-tier quota, the tariff
// versions, the replay, the external cluster's keys and the part.
func (s *Session) notes() []results.Note {
	var n []results.Note
	add := func(kind results.NoteKind, text string) { n = append(n, results.Note{Kind: kind, Text: text}) }
	if tc, ok := s.checker.(*check.TwoTier); ok {
		over, denied := tc.QuotaTotals()
		add(results.NoteTwoTier, fmt.Sprintf("two tiers: quota %d per %s per tenant; %d allowed requests beyond the quota (in overspend), %d denials the full quota explains",
			s.Spec.Policy.Quota.Limit, time.Duration(s.Spec.Policy.Quota.Window), over, denied))
	}
	if s.tariffs != nil {
		add(results.NoteTariffs, s.tariffs.note(time.Unix(0, s.marks.baseNs.Load())))
	}
	if rp := s.replay; rp != nil {
		add(results.NoteReplay, fmt.Sprintf("replay of %s at speed %g (%d requests, %d tenants)", rp.path, rp.speed, len(rp.tr.Requests), len(rp.tenants)))
	}
	if s.store != nil {
		add(results.NoteExternal, s.store.note)
	}
	add(results.NotePart, partNote(s.opts.Part))
	return n
}

// writeTally writes keys.csv into dir.
func writeTally(dir string, keys []results.KeyTally) error {
	f, err := os.Create(filepath.Join(dir, results.TallyFile))
	if err != nil {
		return err
	}
	if err := results.WriteTally(f, keys); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", results.TallyFile, err)
	}
	return f.Close()
}

// maxCost is the largest cost a request of the run has: a replay's largest, else 1.
func (s *Session) maxCost() int64 {
	c := int64(1)
	if s.replay != nil {
		for _, r := range s.replay.tr.Requests {
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
