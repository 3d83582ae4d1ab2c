package engine

import (
	"context"
	"sync/atomic"
	"time"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/run/check"
	"ratelab/run/faults"
	"ratelab/scenarios"
)

// wireFaults builds the fault runner of a spec with faults, wired to the session through
// faultRun and faultGateways, with the cluster's timeouts that bound an isolated primary's
// window, or kind gubernator's daemons.
func (s *Session) wireFaults() {
	if s.Spec.HasFault(scenarios.FaultClockSkew) {
		s.skew = make([]atomic.Int64, len(s.gateways))
	}
	if len(s.Spec.Faults) == 0 {
		return
	}
	c := s.Spec.Cluster
	cfg := faults.Config{NodeTimeout: time.Duration(c.NodeTimeout), Logf: s.logf}
	if c.MinReplicasToWrite > 0 {
		cfg.MinReplicasLag = time.Duration(c.MinReplicasMaxLag)
	}
	if s.guber != nil {
		cfg.Daemons = s.guber // kind gubernator: faults of daemon:N
	}
	var cl cluster.Cluster // nil without Redis: gateway and daemon faults only
	if s.store != nil {
		cl = s.store.cl
	}
	s.faults = faults.New(cl, s.Spec.Faults, faultRun{s}, faultGateways{s}, cfg)
}

// faultRun is the session as the fault runner sees it: the hottest tenant's key, the checker's
// causes, the per-second marks, the traffic per slot the in-process driver tallies and the
// tokens per slot tokens back counts.
type faultRun struct{ s *Session }

func (r faultRun) HotKey() string                   { return r.KeyOf(r.s.Tenants[0]) }
func (r faultRun) KeyOf(tenant string) string       { return limiter.KeyFor(tenant, r.s.Endpoints[0]) }
func (r faultRun) CauseFor(name string) check.Cause { return r.s.checker.CauseFor(name) }
func (r faultRun) OnInject(atS float64)             { r.s.marks.fault(atS) }
func (r faultRun) SlotTraffic() map[int]int64       { return r.s.tally.slotTraffic() }
func (r faultRun) DebitTokens() int64               { return r.s.debitTokens() }

func (r faultRun) SlotAllowed() (map[int]int64, bool) {
	if r.s.back == nil {
		return nil, false
	}
	return r.s.back.slotAllowed(), true
}

// faultGateways is the session's gateways as a gateway or region fault changes them: their
// clocks (s.skew), leases (s.leases), cut switches (s.cuts) and the regions.
type faultGateways struct{ s *Session }

func (g faultGateways) Count() int { return len(g.s.gateways) }

func (g faultGateways) Has(p faults.Feature) bool {
	switch p {
	case faults.GatewayClocks:
		return g.s.skew != nil
	case faults.GatewayLeases:
		return len(g.s.leases) > 0
	case faults.GatewayLinks:
		return g.s.cuts != nil
	case faults.Regions:
		return g.s.regions != nil
	}
	return false
}

func (g faultGateways) SetSkew(i int, off time.Duration) { g.s.skew[i].Store(int64(off)) }

func (g faultGateways) Drop(i int) int64 {
	l := g.s.leases[i]
	before := l.LostTokens()
	l.Drop()
	return l.LostTokens() - before
}

func (g faultGateways) Cut(i int, cut bool) { g.s.cuts[i].Store(cut) }

func (g faultGateways) PartitionRegion(_ context.Context, region string, cut bool) error {
	return g.s.setRegionCut(region, cut)
}

var (
	_ faults.Run      = faultRun{}
	_ faults.Gateways = faultGateways{}
)
