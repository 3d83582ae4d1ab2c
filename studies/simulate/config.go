package simulate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	"ratelab/studies/capacity"
)

// Defaults of a simulation.
const (
	// DefaultMaxRequests bounds the simulated arrivals of the steady-state phase: the horizon is
	// shortened to MaxRequests/Rate, so 10M decisions/s simulate 0.2 s. A primary at 5M/30
	// ~ 170K/s still serves tens of thousands of requests in that time, which settles
	// queues whose service time is microseconds (the mean busy period of an M/G/1 queue at
	// utilisation 0.8 is 5 service times).
	DefaultMaxRequests = 1_000_000
	// DefaultHorizon is the simulated time when the rate is low enough to fit MaxRequests.
	DefaultHorizon = 2 * time.Second
	// DefaultTimeout is the client's decision timeout (as scenarios' limiter.timeout).
	DefaultTimeout = 50 * time.Millisecond
	// DefaultElection is the time from a primary being flagged as failing (cluster-node-timeout)
	// to its replica serving: what a SIGKILLed primary of a local cluster takes beyond its
	// cluster-node-timeout to be replaced (docs/capacity.md, "Simulate").
	DefaultElection = 1300 * time.Millisecond
	// DefaultReplicationLag is how far a replica trails its primary: debits in that window are
	// lost when the replica is promoted. 1 ms is a healthy loopback replica; pass yours.
	DefaultReplicationLag = time.Millisecond
)

// Config describes one simulated cluster and its traffic.
type Config struct {
	// Primaries is the number of primaries (one per shard), >= 1 (simulate predict --primaries;
	// the JSON field keeps the name shards).
	Primaries int `json:"shards"`
	// Rate is the offered decisions per second (Poisson arrivals), > 0.
	Rate float64 `json:"rate"`
	// Tenants and Theta are the key popularity (Zipf; Theta 0 is uniform), as in scenarios.
	Tenants int     `json:"tenants"`
	Theta   float64 `json:"theta"`
	// Service is a primary's script time; Client the client-side time of each central call's
	// latency (network, client library, scheduling), added to queueing and service.
	Service Service   `json:"service"`
	Client  Empirical `json:"client"`
	// Host, when set, puts the clients and the primaries on one machine whose CPU every decision
	// queues for (co-location: the one-machine runs this model is validated on). nil (default):
	// every primary and gateway has a host of its own, as in a cluster sized for 1M-10M/s.
	Host *Host `json:"host,omitempty"`
	// ClientCPUUs is the client's CPU per decision (generator and client library), µs; when set
	// the result says how many gateway cores the rate needs. 0: not reported.
	ClientCPUUs float64 `json:"client_cpu_us,omitempty"`
	// Lease > 1 gives each of Gateways gateways local leases of Lease tokens living LeaseTTL.
	Lease    int64         `json:"lease"`
	Gateways int           `json:"gateways"`
	LeaseTTL time.Duration `json:"lease_ttl_ns"`
	// Timeout is the client's decision timeout; a call that would take longer counts as a
	// timeout (Redis still runs it: a server does not see the client give up).
	Timeout time.Duration `json:"timeout_ns"`
	// MaxInflight bounds the decisions arrived and not yet decided, as the generator's
	// load.max_inflight does: an arrival beyond it is dropped (counted, not decided). 0: no bound.
	MaxInflight int `json:"max_inflight,omitempty"`
	// Horizon and MaxRequests bound the steady-state phase (see DefaultMaxRequests).
	Horizon     time.Duration `json:"horizon_ns"`
	MaxRequests int           `json:"max_requests"`
	// Seed makes the run reproducible.
	Seed uint64 `json:"seed"`
	// Failover, when set, adds a phase that fails one primary.
	Failover *Failover `json:"failover,omitempty"`
}

// Failover is one primary dying and its replica taking over.
type Failover struct {
	// Primary is the primary that dies; -1 is the busiest.
	Primary int `json:"shard"`
	// At is when it dies, from the start of the failover phase (default 0.5 s).
	At time.Duration `json:"at_ns"`
	// NodeTimeout is cluster-node-timeout (default 1 s) and Election the promotion after it
	// (default DefaultElection): the primary serves nothing for their sum.
	NodeTimeout time.Duration `json:"node_timeout_ns"`
	Election    time.Duration `json:"election_ns"`
	// ReplicationLag is the window of debits lost at promotion (default DefaultReplicationLag).
	ReplicationLag time.Duration `json:"replication_lag_ns"`
	// Fail is what decisions on the dead primary do: open (allow), closed (deny) or error.
	Fail string `json:"fail"`
	// PolicyRate and PolicyBurst are each key's bucket, to bound fail-open overspend.
	PolicyRate  float64 `json:"policy_rate"`
	PolicyBurst float64 `json:"policy_burst"`
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	c.Service.Kind = cmp.Or(c.Service.Kind, Lognormal)
	c.Gateways = cmp.Or(c.Gateways, capacity.DefaultGateways)
	c.LeaseTTL = cmp.Or(c.LeaseTTL, capacity.DefaultLeaseTTL)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.Horizon = cmp.Or(c.Horizon, DefaultHorizon)
	c.MaxRequests = cmp.Or(c.MaxRequests, DefaultMaxRequests)
	c.Seed = cmp.Or(c.Seed, 1)
	if f := c.Failover; f != nil {
		g := *f
		g.At = cmp.Or(g.At, 500*time.Millisecond)
		g.NodeTimeout = cmp.Or(g.NodeTimeout, time.Second)
		g.Election = cmp.Or(g.Election, DefaultElection)
		g.ReplicationLag = cmp.Or(g.ReplicationLag, DefaultReplicationLag)
		g.Fail = cmp.Or(g.Fail, "error")
		g.PolicyRate = cmp.Or(g.PolicyRate, 100)
		g.PolicyBurst = cmp.Or(g.PolicyBurst, 200)
		c.Failover = &g
	}
	return c
}

// Validate reports every bad field, each with its name, value and fix.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if c.Primaries < 1 || c.Primaries > 16384 {
		bad("shards %d: must be between 1 and 16384 (one slot each at most)", c.Primaries)
	}
	if !(c.Rate > 0) || math.IsInf(c.Rate, 0) || c.Rate > 1e9 {
		bad("rate %v: must be > 0 and at most 1e9 decisions/s", c.Rate)
	}
	if _, err := capacity.NewPopularity(c.Tenants, c.Theta); err != nil {
		errs = append(errs, err)
	}
	if err := c.Service.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Client.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Host != nil {
		if err := c.Host.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if !(c.ClientCPUUs >= 0) || math.IsInf(c.ClientCPUUs, 0) {
		bad("client cpu %v µs: must be >= 0", c.ClientCPUUs)
	}
	if c.Lease < 0 {
		bad("lease %d: must be >= 0 tokens (0 or 1: no leases)", c.Lease)
	}
	if c.Gateways < 1 || c.Gateways > 100_000 {
		bad("gateways %d: must be between 1 and 100,000", c.Gateways)
	}
	if c.LeaseTTL <= 0 || c.Timeout <= 0 || c.Horizon <= 0 {
		bad("lease-ttl %v, timeout %v, horizon %v: must all be > 0", c.LeaseTTL, c.Timeout, c.Horizon)
	}
	if c.MaxInflight < 0 {
		bad("max-inflight %d: must be >= 0 (0: no bound)", c.MaxInflight)
	}
	if c.MaxRequests < 1000 || c.MaxRequests > 100_000_000 {
		bad("max-requests %d: must be between 1,000 and 100,000,000", c.MaxRequests)
	}
	if f := c.Failover; f != nil {
		if f.Primary < -1 || f.Primary >= c.Primaries {
			bad("failover shard %d: must be -1 (the busiest) or 0..%d", f.Primary, c.Primaries-1)
		}
		switch f.Fail {
		case "open", "closed", "error":
		default:
			bad("failover fail %q: use open, closed or error", f.Fail)
		}
		if f.At < 0 || f.NodeTimeout <= 0 || f.Election < 0 || f.ReplicationLag < 0 {
			bad("failover times at %v, node-timeout %v, election %v, lag %v: must be >= 0 (node-timeout > 0)", f.At, f.NodeTimeout, f.Election, f.ReplicationLag)
		}
		if !(f.PolicyRate > 0) || !(f.PolicyBurst >= 1) {
			bad("failover policy rate %v burst %v: must be > 0 and >= 1", f.PolicyRate, f.PolicyBurst)
		}
	}
	return errors.Join(errs...)
}

// cost is the central calls/s of a key with r decisions/s (capacity.LeaseCost).
func (c Config) cost() func(float64) float64 {
	return func(r float64) float64 { return capacity.LeaseCost(r, c.Lease, c.Gateways, c.LeaseTTL) }
}
