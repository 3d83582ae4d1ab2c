package faults

import (
	"context"
	"time"

	"ratelab/run/check"
)

// Run is what a Runner needs from the run it disturbs: which keys and slots are busy, how the
// checker names a cause, and where to mark an injection. The engine's session implements it.
type Run interface {
	// HotKey is a key of the hottest tenant: target hottest is the primary of its slot.
	HotKey() string
	// KeyOf returns a key of tenant, for target primary-of:TENANT.
	KeyOf(tenant string) string
	// CauseFor maps a cause name (failover, pause, latency, noscript, reshard, restart,
	// clock-skew, partition, and kill for a gubernator daemon's) to the checker's Cause.
	CauseFor(name string) check.Cause
	// OnInject hears of each fault as it starts, in seconds since the start of the run.
	OnInject(atS float64)
	// SlotTraffic returns the decisions so far per slot: a reshard moves the busiest slots.
	SlotTraffic() map[int]int64
	// SlotAllowed returns the tokens the store allowed so far per slot — the rate on a
	// partitioned primary's slots bounds what its window can lose — and false when the run
	// does not count them.
	SlotAllowed() (map[int]int64, bool)
	// DebitTokens is the most tokens one script call debits: what a lost write may return (in
	// lease mode the lease size, or a larger request's cost; else the largest cost).
	DebitTokens() int64
}

// A Feature is a piece of run state a fault of the gateways or regions changes.
type Feature int

// The features a run may have (Gateways.Has).
const (
	GatewayClocks Feature = iota // the gateways' clocks: clock-skew
	GatewayLeases                // the gateways' leases: gateway-kill
	GatewayLinks                 // the gateways' links to Redis: a partition of gateways
	Regions                      // the run's regions: a partition of region:NAME
)

// Gateways is the run's gateways (and regions) as a fault of theirs changes them. A fault whose
// Feature the run does not have is recorded as failed; the other methods are called only for
// features it has.
type Gateways interface {
	// Count is the number of gateways a gateway fault may target.
	Count() int
	// Has reports whether the run has feature f.
	Has(f Feature) bool
	// SetSkew sets gateway g's clock offset (a clock-skew fault).
	SetSkew(g int, offset time.Duration)
	// Drop kills gateway g — its leases are lost, it goes on empty — and returns the tokens
	// lost.
	Drop(g int) int64
	// Cut cuts gateway g off Redis (cut) or reconnects it: its store calls fail as on a cut
	// network meanwhile (a gateway partition).
	Cut(g int, cut bool)
	// PartitionRegion cuts the region named off the others (cut) or heals it.
	PartitionRegion(ctx context.Context, region string, cut bool) error
}

// Config is the settings of a Runner.
type Config struct {
	// NodeTimeout is the cluster's cluster-node-timeout and MinReplicasLag its
	// min-replicas-max-lag (0: no min-replicas-to-write): together they bound how long a
	// partitioned primary acknowledges writes its replicas never see.
	NodeTimeout, MinReplicasLag time.Duration
	// Logf receives a line per fault injected or failed; nil discards them.
	Logf func(format string, args ...any)
	// Daemons is kind gubernator's cluster, which faults of target daemon:N act on; nil for a
	// run without one (such a fault is then recorded as failed).
	Daemons Daemons
}

// noRun is the Run of a Runner given none: keys are "{tenant}", every cause is 0, no traffic is
// counted and a call debits one token.
type noRun struct{}

func (noRun) HotKey() string                     { return "" }
func (noRun) KeyOf(tenant string) string         { return "{" + tenant + "}" }
func (noRun) CauseFor(string) check.Cause        { return 0 }
func (noRun) OnInject(float64)                   {}
func (noRun) SlotTraffic() map[int]int64         { return nil }
func (noRun) SlotAllowed() (map[int]int64, bool) { return nil, false }
func (noRun) DebitTokens() int64                 { return 1 }

// noGateways is the Gateways of a Runner given none: no gateway, no feature.
type noGateways struct{}

func (noGateways) Count() int                                          { return 0 }
func (noGateways) Has(Feature) bool                                    { return false }
func (noGateways) SetSkew(int, time.Duration)                          {}
func (noGateways) Drop(int) int64                                      { return 0 }
func (noGateways) Cut(int, bool)                                       {}
func (noGateways) PartitionRegion(context.Context, string, bool) error { return nil }

var (
	_ Run      = noRun{}
	_ Gateways = noGateways{}
)
