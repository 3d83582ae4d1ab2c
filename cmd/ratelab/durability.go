package main

import (
	"time"

	"github.com/spf13/cobra"

	"ratelab/scenarios"
)

// durabilityMinReplicas is --durability's fourth value: async debits on primaries that refuse
// writes without a replica acknowledging within the lag (cluster.min_replicas_to_write).
const durabilityMinReplicas = "min-replicas"

// addDurabilityFlags defines --durability, --durability-timeout and --audit.
func addDurabilityFlags(cmd *cobra.Command, o *runOptions) {
	f := cmd.Flags()
	f.StringVar(&o.durability, "durability", "", "override how debits are made durable: async (replication as Redis does it), "+
		"wait (WAIT after each decision), wait-pipeline (WAIT after each pipeline; needs --transport coalesce) or "+
		"min-replicas (async, on primaries with min-replicas-to-write 1 or the scenario's); sets limiter.durability and cluster.min_replicas_to_write together")
	f.BoolVar(&o.audit, "audit", false, "set limiter.audit: count each bucket's debits, so the summary's tokens_back counts the debits a fault returned (kind token-bucket)")
	f.DurationVar(&o.durabilityTimeout, "durability-timeout", 0, "override limiter.durability_timeout, WAIT's timeout (e.g. 50ms; with --durability wait or wait-pipeline)")
}

// applyDurabilityFlags puts --durability and --durability-timeout over the scenario: each value
// of --durability sets both the limiter's WAIT and the primaries' min-replicas, so a sweep over
// its values compares one setting at a time.
func applyDurabilityFlags(set func(string) bool, spec *scenarios.Spec, o runOptions) {
	if set("durability") {
		l, c := &spec.Limiter, &spec.Cluster
		switch o.durability {
		case durabilityMinReplicas:
			l.Durability, l.DurabilityReplicas, l.DurabilityTimeout = scenarios.DurabilityAsync, 0, 0
			c.MinReplicasToWrite = max(c.MinReplicasToWrite, 1)
			if c.MinReplicasMaxLag == 0 {
				c.MinReplicasMaxLag = scenarios.Duration(scenarios.DefaultMinReplicasMaxLag)
			}
		case scenarios.DurabilityAsync, "":
			l.Durability, l.DurabilityReplicas, l.DurabilityTimeout = scenarios.DurabilityAsync, 0, 0
			c.MinReplicasToWrite, c.MinReplicasMaxLag = 0, 0
		default: // wait, wait-pipeline, or a typo Validate names
			l.Durability = o.durability
			if l.DurabilityReplicas == 0 {
				l.DurabilityReplicas = scenarios.DefaultDurabilityReplicas
			}
			if l.DurabilityTimeout == 0 {
				l.DurabilityTimeout = scenarios.Duration(scenarios.DefaultDurabilityTimeout)
			}
			c.MinReplicasToWrite, c.MinReplicasMaxLag = 0, 0
		}
	}
	if set("audit") {
		spec.Limiter.Audit = o.audit
	}
	if set("durability-timeout") {
		spec.Limiter.DurabilityTimeout = scenarios.Duration(time.Duration(o.durabilityTimeout))
	}
}
