package engine

import (
	"math/rand/v2"
	"strconv"
	"time"

	"ratelab/limiter"
	"ratelab/scenarios"
)

// newAuditRun names a run's audit counters: random, so that no two runs on one cluster (a
// running one, reused for an hour, the counters' TTL) share a counter.
func newAuditRun() string {
	return "run" + strconv.FormatUint(rand.Uint64(), 36)
}

// durabilityOptions are the token bucket's options for the spec's limiter.durability and
// limiter.audit (counters named auditRun), and the mode's note for the environment.
func durabilityOptions(spec *scenarios.Spec, auditRun string) ([]limiter.Option, string) {
	var opts []limiter.Option
	var note string
	l := spec.Limiter
	if d := spec.DurabilityMode(); d != scenarios.DurabilityAsync {
		opts = append(opts, limiter.WithDurability(limiter.Durability{Mode: limiter.DurabilityMode(d),
			Replicas: l.DurabilityReplicas, Timeout: time.Duration(l.DurabilityTimeout)}))
		note += ", durability " + d
	}
	if l.Audit {
		opts = append(opts, limiter.WithAudit(auditRun))
		note += ", debit audit"
	}
	return opts, note
}
