package engine

import (
	"fmt"

	"ratelab/results"
)

// leaseSummary is what the lease layer adds to a run's summary: its notes — how many tokens
// expired or were dropped unused (availability lost), the most one gateway held at once, how
// many decisions waited for a central round trip — and the most tokens it held at any moment,
// the leases' source of the overspend bound (Session.bound).
type leaseSummary struct {
	gateways int // 0 without leases
	// worst and all are leaseHeld's: the worst key's most outstanding, and the sum over keys.
	worst, all int64
	notes      []results.Note
}

// leaseSummary is the lease layer's piece of a run of decisions decisions; empty without leases.
func (s *Session) leaseSummary(decisions int64) leaseSummary {
	if len(s.leases) == 0 {
		return leaseSummary{}
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
	p := leaseSummary{gateways: len(s.leases)}
	p.worst, p.all = s.leaseHeld()
	decisions = max(decisions, 1)
	p.notes = []results.Note{
		{Kind: results.NoteLeases, Text: fmt.Sprintf("leases: %d gateways, %d central lease fetches (%.4f per decision, %.0fx fewer than one per decision), %d tokens expired unused, %d outstanding at the end, at most %d at once over all keys in one gateway",
			len(s.leases), calls, float64(calls)/float64(decisions), float64(decisions)/float64(max(calls, 1)), lost, outstanding, gatewayMax)},
		{Kind: results.NoteLeases, Text: fmt.Sprintf("%d decisions (%.2f%%) waited for a lease fetch, %d refresh-ahead fetches (%d failed)",
			waited, 100*float64(waited)/float64(decisions), refreshes, refreshErrs)},
	}
	return p
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
