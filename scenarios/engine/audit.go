package engine

import (
	"time"

	"ratelab/limiter"
	"ratelab/scenarios"
)

// durabilityOptions are the token bucket's options for the spec's limiter.durability and
// limiter.audit, and the mode's note for the environment.
func durabilityOptions(spec *scenarios.Spec) ([]limiter.Option, string) {
	var opts []limiter.Option
	var note string
	l := spec.Limiter
	if d := spec.DurabilityMode(); d != scenarios.DurabilityAsync {
		opts = append(opts, limiter.WithDurability(limiter.Durability{Mode: limiter.DurabilityMode(d),
			Replicas: l.DurabilityReplicas, Timeout: time.Duration(l.DurabilityTimeout)}))
		note += ", durability " + d
	}
	if l.Audit {
		opts = append(opts, limiter.WithAudit())
		note += ", debit audit"
	}
	return opts, note
}
