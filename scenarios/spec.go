package scenarios

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in YAML as a Go duration string ("30s", "250ms").
type Duration time.Duration

// UnmarshalYAML accepts a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration such as 30s or 250ms, got %q", n.Line, n.Value)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration; write it like 30s, 1m30s or 250ms", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Spec is one scenario: who sends what at which rate, against which limiter and cluster.
type Spec struct {
	// Name identifies the scenario in outputs. Required.
	Name string `yaml:"name"`
	// Description is one or two sentences for `ratelab scenarios list`.
	Description string `yaml:"description,omitempty"`
	// Duration of the measured run. Default 30s, or with load.stages their total; given with
	// stages, it wins: a shorter duration cuts the stages, a longer one holds the last rate.
	Duration Duration `yaml:"duration,omitempty"`
	// Seed makes the request stream reproducible. Default 1.
	Seed      uint64     `yaml:"seed,omitempty"`
	Load      Load       `yaml:"load"`
	Tenants   Tenants    `yaml:"tenants"`
	Endpoints []Endpoint `yaml:"endpoints"`
	Policy    Policy     `yaml:"policy"`
	Limiter   LimiterCfg `yaml:"limiter,omitempty"`
	Cluster   ClusterCfg `yaml:"cluster,omitempty"`
	// Faults are injected into the cluster while the load runs.
	Faults []FaultSpec `yaml:"faults,omitempty"`
	// SLO is the run's pass/fail contract.
	SLO SLO `yaml:"slo,omitempty"`
	// Via is how requests reach the limiter: process (decided in-process by the engine, the
	// default) or http (one ratelab gateway server per simulated gateway on loopback ports,
	// driven by vegeta; see docs/attack.md). Every limiter kind, policy and cluster runs over
	// HTTP; clock: schedule and clock-skew faults do not (see ViaHTTP).
	Via string `yaml:"via,omitempty"`
	// Trace, when set, replays a trace file instead of the seeded schedule: its requests, timing,
	// tenants and costs. load.rate, load.pacer, tenants and duration then come from the trace.
	Trace *TraceCfg `yaml:"trace,omitempty"`
	// Regions, when set, spreads the gateways over regions with a round trip between them and
	// shares each tenant's limit between them by a design (see RegionsCfg).
	Regions *RegionsCfg `yaml:"regions,omitempty"`
}

// Load is the offered load. The generator is open loop: the schedule does not wait for answers.
type Load struct {
	// Rate is the offered rate in requests per second. Required, > 0; with Stages it is the
	// start rate, >= 0 (default 0).
	Rate float64 `yaml:"rate"`
	// Stages ramp the arrival rate from Rate, step by step (see Stage); the run lasts their total
	// unless duration says otherwise. Empty: the rate is constant.
	Stages []Stage `yaml:"stages,omitempty"`
	// Pacer is the arrival process: constant (default) or poisson.
	Pacer string `yaml:"pacer,omitempty"`
	// MaxInflight bounds requests scheduled but not yet answered; beyond it a request is counted as
	// dropped by the generator. Default 8192.
	MaxInflight int `yaml:"max_inflight,omitempty"`
	// Concurrency is the number of worker goroutines making decisions. Default 256 (0 = default).
	Concurrency int `yaml:"concurrency,omitempty"`
}

// Values of Load.Pacer.
const (
	PacerConstant = "constant" // evenly spaced arrivals
	PacerPoisson  = "poisson"  // exponential gaps at the same mean rate
)

// Tenants is the key population and its skew.
type Tenants struct {
	// Count of tenants. Required, >= 1.
	Count int `yaml:"count"`
	// Distribution: zipf (default), uniform or hotspot.
	Distribution string `yaml:"distribution,omitempty"`
	// Theta is the Zipf exponent (> 0; 0.99 is the classic skew). Default 0.99.
	Theta float64 `yaml:"theta,omitempty"`
	// HotShare is, for hotspot, the share of traffic sent to the HotKeys hottest tenants.
	HotShare float64 `yaml:"hot_share,omitempty"`
	// HotKeys is, for hotspot, how many tenants are hot.
	HotKeys int `yaml:"hot_keys,omitempty"`
}

// Values of Tenants.Distribution.
const (
	DistZipf    = "zipf"    // tenant i is chosen with weight 1/(i+1)^theta
	DistUniform = "uniform" // every tenant alike
	DistHotspot = "hotspot" // hot_share of the traffic on the hot_keys hottest tenants
)

// Endpoint is one API endpoint, its share of traffic and what it does when the store fails.
type Endpoint struct {
	Name   string  `yaml:"name"`
	Weight float64 `yaml:"weight"`
	// Fail is what a decision does when Redis fails or times out: open (allow), closed (deny) or
	// local (an in-process emergency bucket at local_fraction of the rate). Empty: the failure is
	// an error outcome.
	Fail string `yaml:"fail,omitempty"`
	// Budget is this endpoint's decision timeout when Fail is set. Default limiter.timeout.
	Budget Duration `yaml:"budget,omitempty"`
	// LocalFraction is, for fail: local, the emergency bucket's share of the policy. Default 0.5.
	LocalFraction float64 `yaml:"local_fraction,omitempty"`
}

// Values of Endpoint.Fail.
const (
	FailOpen   = "open"   // allow the request
	FailClosed = "closed" // deny the request
	FailLocal  = "local"  // decide by an in-process emergency bucket
)

// Policy is the limit per tenant and endpoint: rate and burst for the token bucket, leases and
// GCRA; limit per window for the window algorithms.
type Policy struct {
	// Rate in tokens (requests) per second, > 0.
	Rate float64 `yaml:"rate,omitempty"`
	// Burst is the bucket capacity in tokens, >= 1.
	Burst int64 `yaml:"burst,omitempty"`
	// Limit is the most requests per Window (fixed-window, sliding-window, sliding-log).
	Limit int64 `yaml:"limit,omitempty"`
	// Window of the window algorithms, >= 1ms.
	Window Duration `yaml:"window,omitempty"`
	// Quota is the long tier of limiter.kind two-tier: at most Limit requests per tenant per
	// Window (a fixed window aligned on the Unix epoch), on top of the rate/burst bucket per
	// tenant endpoint.
	Quota *QuotaCfg `yaml:"quota,omitempty"`
	// File names a tariff file (limiter.ParseTariffs format: plans -> limits per endpoint, tenant
	// -> plan), relative to the scenario file's directory. It replaces rate and burst: each tenant
	// endpoint gets its plan's bucket, and the file is re-read every second while the run goes.
	File string `yaml:"file,omitempty"`
	// Tariffs is the same document written inline instead of File.
	Tariffs *InlineTariffs `yaml:"tariffs,omitempty"`
}

// InlineTariffs is a tariff document written inside a scenario, kept as YAML: limiter.ParseTariffs
// validates it.
type InlineTariffs struct{ node *yaml.Node }

// UnmarshalYAML keeps the document as written.
func (t *InlineTariffs) UnmarshalYAML(n *yaml.Node) error {
	t.node = n
	return nil
}

// MarshalYAML writes the document back.
func (t InlineTariffs) MarshalYAML() (any, error) { return t.node, nil }

// QuotaCfg is a two-tier policy's long quota.
type QuotaCfg struct {
	// Limit in requests per tenant per Window, >= 1.
	Limit int64 `yaml:"limit"`
	// Window of the quota, 1ms..8760h, e.g. 24h for a daily quota.
	Window Duration `yaml:"window"`
}

// LimiterCfg picks the limiter under test.
type LimiterCfg struct {
	// Kind: token-bucket (Lua on Redis Cluster, default), gcra, fixed-window, sliding-window,
	// sliding-log, two-tier, lease (the Kind* constants), memory (the in-process twin), noop
	// (allows everything: measures the generator itself), redis-rate (go-redis/redis_rate on the
	// run's cluster) or gubernator (a gubernator cluster started for the run; see Gubernator).
	Kind LimiterKind `yaml:"kind,omitempty"`
	// Timeout of one decision. Default 50ms.
	Timeout Duration `yaml:"timeout,omitempty"`
	// Breaker stops calling a node after consecutive failures (only with endpoints' fail set).
	Breaker *BreakerCfg `yaml:"breaker,omitempty"`
	// Lease configures kind: lease (local token leases per simulated gateway). Other kinds ignore
	// it, so a lease scenario runs centrally on the same trace with --limiter token-bucket.
	Lease *LeaseCfg `yaml:"lease,omitempty"`
	// Clock is whose time a decision uses: gateway (the request's now, sent to the script; the
	// stored time never moves backwards), redis (TIME inside the script; token-bucket only) or
	// schedule (the request's intended time: deterministic replays; process only). Default gateway.
	Clock string `yaml:"clock,omitempty"`
	// Transport is how kind token-bucket's decisions travel to Redis: plain (one EVALSHA call per
	// decision, as a gateway without batching makes) or coalesce (limiter.CoalescingBucket:
	// concurrent decisions queued per primary and sent as one pipeline of EVALSHAs; same script,
	// keys, arguments, timeouts, NOSCRIPT fallback and fail policies). Default plain.
	Transport string `yaml:"transport,omitempty"`
	// Gateways is how many simulated gateway instances the workers are split across (worker i
	// belongs to gateway i mod Gateways), for faults that hit some gateways only (clock-skew);
	// via: http serves each from its own gateway server. Default 1; kind lease takes
	// lease.gateways instead.
	Gateways int `yaml:"gateways,omitempty"`
	// Durability is what a decision waits for before it counts: async (the default: the
	// primary's answer; replication follows), wait (WAIT for durability_replicas after each
	// decision), wait-pipeline (one WAIT after each pipeline of a coalescing transport). A
	// WAIT that times out short of its replicas makes the decision an error (unreplicated).
	Durability string `yaml:"durability,omitempty"`
	// DurabilityReplicas and DurabilityTimeout are WAIT's numreplicas (default 1) and timeout
	// (default 50ms).
	DurabilityReplicas int      `yaml:"durability_replicas,omitempty"`
	DurabilityTimeout  Duration `yaml:"durability_timeout,omitempty"`
	// Gubernator configures kind: gubernator (the daemons and how they decide); other kinds
	// ignore it. Default: 3 daemons, behavior batching, algorithm leaky-bucket.
	Gubernator *GubernatorCfg `yaml:"gubernator,omitempty"`
	// Audit makes every bucket keep a count of the tokens it debited (in a key of the tenant's
	// slot beside the bucket), so a run can count the debits a fault returned (tokens_back).
	Audit bool `yaml:"audit,omitempty"`
}

// LeaseCfg is the local-lease layer: each of Gateways simulated gateway instances takes up to Size
// tokens at once from the central bucket and spends them in memory; unused tokens expire after TTL.
type LeaseCfg struct {
	// Size of one lease in tokens, 1..policy.burst. Default 100 (capped at the burst).
	Size int64 `yaml:"size,omitempty"`
	// Gateways is the number of simulated gateway instances sharing the cluster. Default 8.
	Gateways int `yaml:"gateways,omitempty"`
	// TTL of a lease. Default 1s.
	TTL Duration `yaml:"ttl,omitempty"`
	// Refresh is refresh-ahead (limiter.WithLeaseRefresh): a spend that leaves at most
	// refresh*size tokens, or comes within refresh*ttl of the lease's expiry, tops the lease up to
	// size in the background, so the key's next requests do not wait for Redis. 0 turns it off;
	// otherwise a fraction below 1. Default 0.25.
	Refresh *float64 `yaml:"refresh,omitempty"`
}

// BreakerCfg is a per-node circuit breaker: after Threshold consecutive failures the node is not
// called for Cooldown; then one probe decides whether it closes again.
type BreakerCfg struct {
	// Threshold of consecutive failures, default 5.
	Threshold int `yaml:"threshold,omitempty"`
	// Cooldown before a probe, default 1s.
	Cooldown Duration `yaml:"cooldown,omitempty"`
}

// ClusterCfg is the Redis Cluster the limiter runs on.
type ClusterCfg struct {
	// Provider: local (redis-server child processes, default), running (the cluster started by
	// `ratelab cluster up`), docker (containers started through the Docker API) or external (a
	// cluster someone else runs, at URL).
	Provider ClusterProvider `yaml:"provider,omitempty"`
	// URL locates an external cluster: redis://[user@]host:port[,host:port...] or rediss:// for
	// TLS. Required with provider external, refused otherwise. It never holds a password.
	URL string `yaml:"url,omitempty"`
	// Image is the Redis image of provider docker; empty means the docker package's default.
	Image string `yaml:"image,omitempty"`
	// Primaries, default 3 (0 or absent means the default).
	Primaries int `yaml:"primaries,omitempty"`
	// Replicas per primary, default 1 (0 is allowed: no failover possible).
	Replicas *int `yaml:"replicas,omitempty"`
	// NodeTimeout is cluster-node-timeout. Default 1s.
	NodeTimeout Duration `yaml:"node_timeout,omitempty"`
	// MinReplicasToWrite and MinReplicasMaxLag set every primary's min-replicas-to-write and
	// min-replicas-max-lag: a primary with fewer replicas acknowledging within the lag refuses
	// writes (NOREPLICAS). 0 (the default) leaves Redis's default: no such check.
	MinReplicasToWrite int      `yaml:"min_replicas_to_write,omitempty"`
	MinReplicasMaxLag  Duration `yaml:"min_replicas_max_lag,omitempty"`
}

// HasFailPolicy reports whether any endpoint decides by a fail policy when the store fails.
func (s *Spec) HasFailPolicy() bool {
	for _, e := range s.Endpoints {
		if e.Fail != "" {
			return true
		}
	}
	return false
}

// YAML returns the resolved spec (defaults applied) as YAML.
func (s *Spec) YAML() []byte {
	out, err := yaml.Marshal(s)
	if err != nil {
		// A Spec holds only plain fields; Marshal cannot fail on it.
		panic(err)
	}
	return out
}
