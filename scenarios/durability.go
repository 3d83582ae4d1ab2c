package scenarios

import (
	"fmt"
	"time"
)

// Values of limiter.durability.
const (
	// DurabilityAsync counts a decision at the primary's answer; replication follows (Redis's
	// default, and the default here: an empty durability means async).
	DurabilityAsync = "async"
	// DurabilityWait sends WAIT durability_replicas durability_timeout after each decision.
	DurabilityWait = "wait"
	// DurabilityWaitPipeline sends one WAIT after each pipeline of the coalescing transport.
	DurabilityWaitPipeline = "wait-pipeline"
)

// Defaults of the durability fields.
const (
	// DefaultDurabilityReplicas is WAIT's numreplicas under durability wait or wait-pipeline.
	DefaultDurabilityReplicas = 1
	// DefaultDurabilityTimeout is WAIT's timeout under durability wait or wait-pipeline.
	DefaultDurabilityTimeout = 50 * time.Millisecond
	// DefaultMinReplicasMaxLag is min-replicas-max-lag when min_replicas_to_write is set
	// without it: Redis's own default.
	DefaultMinReplicasMaxLag = 10 * time.Second
)

// DurabilityMode is limiter.durability with the default spelled out: async, wait or
// wait-pipeline.
func (s *Spec) DurabilityMode() string {
	if s.Limiter.Durability == "" {
		return DurabilityAsync
	}
	return s.Limiter.Durability
}

// DurabilityName is the summary's environment.durability: the limiter's durability, or
// min-replicas when the debits stay async but the primaries refuse writes without a replica
// acknowledging within the lag.
func (s *Spec) DurabilityName() string {
	d := s.DurabilityMode()
	if d == DurabilityAsync && s.Cluster.MinReplicasToWrite > 0 {
		return "min-replicas"
	}
	return d
}

// defaultDurability fills WAIT's replicas and timeout under a WAIT durability, and the lag of
// min-replicas-to-write.
func (s *Spec) defaultDurability() {
	l := &s.Limiter
	if l.Durability == DurabilityWait || l.Durability == DurabilityWaitPipeline {
		if l.DurabilityReplicas == 0 {
			l.DurabilityReplicas = DefaultDurabilityReplicas
		}
		if l.DurabilityTimeout == 0 {
			l.DurabilityTimeout = Duration(DefaultDurabilityTimeout)
		}
	}
	if c := &s.Cluster; c.MinReplicasToWrite > 0 && c.MinReplicasMaxLag == 0 {
		c.MinReplicasMaxLag = Duration(DefaultMinReplicasMaxLag)
	}
}

// validateDurability checks limiter.durability and its WAIT parameters, limiter.audit, and the
// cluster's min-replicas settings: their values and the kind, transport, replicas and provider
// each needs.
func (s *Spec) validateDurability(bad badFunc) {
	l := s.Limiter
	replicas := -1 // unknown: a spec validated before its defaults
	if s.Cluster.Replicas != nil {
		replicas = *s.Cluster.Replicas
	}
	switch l.Durability {
	case "", DurabilityAsync:
		if l.DurabilityReplicas != 0 {
			bad("limiter.durability_replicas", l.DurabilityReplicas, "only WAIT takes replicas: set limiter.durability: wait (or wait-pipeline), or drop durability_replicas")
		}
		if l.DurabilityTimeout != 0 {
			bad("limiter.durability_timeout", time.Duration(l.DurabilityTimeout), "only WAIT takes a timeout: set limiter.durability: wait (or wait-pipeline), or drop durability_timeout")
		}
	case DurabilityWait, DurabilityWaitPipeline:
		s.validateWait(replicas, bad)
	default:
		bad("limiter.durability", fmt.Sprintf("%q", l.Durability), "use async (the default), wait (WAIT after each decision) or wait-pipeline (WAIT after each pipeline; transport coalesce)")
	}
	if l.Audit && l.Kind != KindTokenBucket {
		bad("limiter.audit", true, fmt.Sprintf("only limiter.kind token-bucket keeps a debit audit (kind is %q): drop audit or use token-bucket", l.Kind))
	} else if l.Audit && s.Via == ViaHTTP {
		bad("limiter.audit", true, "tokens back compares the audit with the decisions the engine saw in process: drop audit or use via: process")
	}
	s.validateMinReplicas(replicas, bad)
}

// validateWait checks a WAIT durability: a token bucket to wait after, replicas to wait for,
// and the transport wait-pipeline needs.
func (s *Spec) validateWait(replicas int, bad badFunc) {
	l := s.Limiter
	if l.Kind != KindTokenBucket {
		bad("limiter.durability", l.Durability, fmt.Sprintf("only limiter.kind token-bucket waits for its debits to replicate (kind is %q): use durability: async", l.Kind))
	}
	if l.Durability == DurabilityWaitPipeline && l.Transport != TransportCoalesce {
		bad("limiter.durability", l.Durability, fmt.Sprintf("wait-pipeline waits once per pipeline: set limiter.transport: coalesce (it is %q), or use durability: wait", l.Transport))
	}
	if s.Cluster.Provider == ProviderExternal {
		// The script and its WAIT go on one primary's own connection, which the run's key
		// prefix on an external cluster does not reach.
		bad("limiter.durability", l.Durability, "WAIT runs on each primary's own connection, outside the key prefix of a run on an external cluster: use durability: async with provider external")
	}
	switch n := l.DurabilityReplicas; {
	case n < 0 || n > 4:
		bad("limiter.durability_replicas", n, "must be between 1 and 4 (the default is 1)")
	case replicas == 0:
		bad("limiter.durability", l.Durability, "WAIT needs replicas to wait for: set cluster.replicas >= 1, or use durability: async")
	case replicas > 0 && n > replicas:
		bad("limiter.durability_replicas", n, fmt.Sprintf("a primary has %d replicas (cluster.replicas): WAIT for at most that many", replicas))
	}
	if t := time.Duration(l.DurabilityTimeout); t < 0 || t > 10*time.Second || (t > 0 && t < time.Millisecond) {
		bad("limiter.durability_timeout", t, "must be between 1ms and 10s (WAIT counts whole milliseconds; the default is 50ms)")
	}
}

// validateMinReplicas checks cluster.min_replicas_to_write and cluster.min_replicas_max_lag:
// a count the shards have replicas for, a lag in whole seconds, and the local provider (ratelab
// sets the config on the nodes it starts).
func (s *Spec) validateMinReplicas(replicas int, bad badFunc) {
	c := s.Cluster
	if n := c.MinReplicasToWrite; n < 0 || n > 4 {
		bad("cluster.min_replicas_to_write", n, "must be between 0 (off, the default) and 4")
	} else if n > 0 && replicas >= 0 && n > replicas {
		bad("cluster.min_replicas_to_write", n, fmt.Sprintf("a primary has %d replicas (cluster.replicas): it would refuse every write; set at most %d", replicas, replicas))
	}
	lag := time.Duration(c.MinReplicasMaxLag)
	switch {
	case lag != 0 && c.MinReplicasToWrite == 0:
		bad("cluster.min_replicas_max_lag", lag, "only matters with cluster.min_replicas_to_write >= 1: set it or drop the lag")
	case lag < 0 || lag > time.Hour || lag%time.Second != 0:
		bad("cluster.min_replicas_max_lag", lag, "must be whole seconds between 1s and 1h (Redis counts it in seconds; the default is 10s)")
	}
	if c.MinReplicasToWrite > 0 && c.Provider != "" && c.Provider != ProviderLocal {
		bad("cluster.min_replicas_to_write", c.MinReplicasToWrite, fmt.Sprintf("ratelab sets it on the nodes it starts: use provider local (provider is %q), or set min-replicas-to-write on the cluster yourself", c.Provider))
	}
}
