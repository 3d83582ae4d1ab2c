package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// addFlags defines the run flags on cmd: `run` and the run that `kubernetes` checks share them.
func (o *runOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", 0, "override the scenario's duration (e.g. 10s)")
	f.Float64Var(&o.rate, "rate", 0, "override the offered rate, requests/s")
	o.policy = newPolicyFlag(&o.policyRate, func() int64 { return o.policyBurst }, func(b int64) { o.policyBurst = b })
	f.Var(o.policy, "policy", "override the policy with a token bucket per tenant and endpoint: rate tokens/s, burst tokens (bucket kinds only; not with tariffs)")
	f.DurationVar(&o.decisionTimeout, "decision-timeout", 0, "override limiter.timeout, the deadline of one limiter decision (e.g. 50ms)")
	f.Uint64Var(&o.seed, "seed", 0, "override the seed of the request stream")
	f.StringVar(&o.out, "out", "", "run `DIR` (default out/<scenario>-<time>); with --repeat the directory of the repetitions")
	f.StringVar(&o.cluster, "cluster", "", "cluster provider: local (start redis-server nodes), running (the one from 'ratelab cluster up'), "+
		"docker (containers) or an external cluster redis://[user@]host:port[,host:port...] (rediss:// for TLS); "+
		"its password comes from $"+cluster.PasswordEnv+" or --password-file, never from the URL")
	f.StringVar(&o.passwordFile, "password-file", "", "file whose first line is the external cluster's password (default $"+cluster.PasswordEnv+")")
	f.StringVar(&o.tlsCA, "tls-ca", "", "CA certificate (PEM) that signed the external cluster's certificates; implies TLS")
	f.StringVar(&o.tlsCert, "tls-cert", "", "client certificate (PEM) for an external cluster that requires one; implies TLS")
	f.StringVar(&o.tlsKey, "tls-key", "", "key (PEM) of --tls-cert")
	f.BoolVar(&o.allowFaults, "allow-faults", false, "let the scenario's cluster faults run against an external cluster (refused without it: the cluster may be shared)")
	f.StringVar(&o.dockerImage, "docker-image", "", "Redis image of --cluster docker (default the official Redis 7 image)")
	f.StringVar(&o.stateFile, "state", "", "state file of 'ratelab cluster up' (with --cluster running)")
	f.IntVar(&o.concurrency, "concurrency", 0, "override load.concurrency (worker goroutines)")
	f.IntVar(&o.maxInflight, "max-inflight", 0, "override load.max_inflight")
	f.StringVar(&o.limiter, "limiter", "", "override limiter.kind: "+scenarios.LimiterKindChoices()+" (the window kinds need policy limit and window, two-tier also policy.quota)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no live progress (a bar on a terminal, a line per second or every few seconds otherwise)")
	f.StringArrayVar(&o.slo, "slo", nil, "add or override an SLO check, key=value ("+strings.Join(scenarios.SLOKeys(), ", ")+"); repeatable")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to FILE (go tool pprof)")
	f.StringVar(&o.memProfile, "memprofile", "", "write a heap profile at the end of the run to FILE")
	f.Var(&o.part, "part", "run part INDEX/COUNT of a load split between COUNT generators (tenant i goes to part i mod COUNT); merge the parts' directories with 'ratelab merge'")
	f.Var(&o.startAt, "start-at", "set up, then start the schedule at TIME (RFC 3339, or +30s: this command's start plus 30 s); give every part of a load the same RFC 3339 TIME so their seconds line up")
	f.IntVar(&o.repeat, "repeat", 1, "run the scenario N times (same seed) into OUT/rep-01 .. OUT/rep-NN, for 'ratelab compare'")
	f.StringVar(&o.recordTrace, "record-trace", "", "write the run's schedule (every offered request: offset, tenant, endpoint, cost) to FILE as a trace")
	f.StringVar(&o.trace, "trace", "", "replay this trace file instead of the scenario's seeded schedule (sets duration, rate and tenants)")
	f.Float64Var(&o.speed, "speed", 1, "replay speed factor for --trace (2 = twice as fast)")
	f.StringVar(&o.transport, "transport", "", "override limiter.transport of kind token-bucket: plain (one script call per decision) or coalesce (one pipeline per primary)")
	f.StringVar(&o.clock, "clock", "", "override limiter.clock: gateway, redis or schedule (decision time = start + intended offset: replays reproduce a run exactly)")
	o.output = addOutputFlag(cmd, runOutputHelp+"; with --repeat, json is an array of the repetitions' summaries", outputJSON, outputMD)
	f.StringVar(&o.via, "via", "", "override via: process (in-process decisions) or http (through ratelab's gateway, driven by vegeta)")
	f.StringVar(&o.design, "design", "", "override regions.design of a multi-region scenario: global, split, rebalance or independent")
	f.DurationVar(&o.period, "period", 0, "override regions.period, the rebalance design's T: how often the shares follow demand (e.g. 500ms)")
	f.StringVar(&o.stages, "stages", "", "ramp the offered rate from --rate (default 0 with stages): TO@OVER ramps to TO requests/s over OVER (0s: a step), hold@D keeps it, comma-separated, e.g. 5000@30s,100000@60s,hold@30s; the run lasts their total unless --duration")
	addDurabilityFlags(cmd, o)
	addMetricsFlags(cmd, &o.metrics)
}

// applyOverrides puts the flags the user set over the scenario and validates the result.
func applyOverrides(cmd *cobra.Command, spec *scenarios.Spec, o runOptions) error {
	set := cmd.Flags().Changed
	// Before --duration, which cuts the stages or holds their last rate.
	if set("stages") {
		// From 0 unless --rate gives the start, as on attack: the scenario's own rate is its
		// steady load, not where a ramp begins.
		spec.Load.Rate = 0
		if err := spec.SetStages(o.stages); err != nil {
			return err
		}
	}
	if set("duration") {
		spec.Duration = scenarios.Duration(o.duration)
	}
	if set("rate") {
		spec.Load.Rate = o.rate
	}
	if set("seed") {
		spec.Seed = o.seed
	}
	if set("cluster") {
		spec.Cluster.Provider, spec.Cluster.URL = scenarios.ClusterProvider(o.cluster), ""
		if strings.HasPrefix(o.cluster, "redis://") || strings.HasPrefix(o.cluster, "rediss://") {
			spec.Cluster.Provider, spec.Cluster.URL = "external", o.cluster
		}
		if spec.Cluster.Provider != "docker" {
			spec.Cluster.Image = ""
		}
	}
	if set("docker-image") {
		spec.Cluster.Image = o.dockerImage
	}
	if set("concurrency") {
		spec.Load.Concurrency = o.concurrency
	}
	if set("max-inflight") {
		spec.Load.MaxInflight = o.maxInflight
	}
	applyLimiterFlags(set, spec, o)
	applyDurabilityFlags(set, spec, o)
	if set("policy") {
		if spec.HasTariffs() {
			return fmt.Errorf("--policy %s: scenario %s takes its limits from tariffs (policy.file or policy.tariffs); edit the tariffs instead", o.policy, spec.Name)
		}
		spec.Policy.Rate, spec.Policy.Burst, spec.Policy.Limit, spec.Policy.Window = o.policyRate, o.policyBurst, 0, 0
	}
	if set("via") {
		spec.Via = o.via
	}
	if set("speed") && o.trace == "" && spec.Trace == nil {
		return fmt.Errorf("--speed %g: only a replay has a speed; add --trace FILE", o.speed)
	}
	if o.trace != "" {
		if set("rate") || set("duration") || set("seed") {
			return fmt.Errorf("--trace %s: the trace fixes the requests, their timing and the run's length; drop --rate, --duration and --seed (use --speed to replay faster)", o.trace)
		}
		spec.Trace = &scenarios.TraceCfg{File: o.trace, Speed: o.speed}
	} else if set("speed") {
		spec.Trace.Speed = o.speed
	}
	if set("design") || set("period") {
		if err := spec.OverrideRegions(o.design, o.period, set("design"), set("period")); err != nil {
			return err
		}
	}
	for _, kv := range o.slo {
		if err := spec.SetSLO(kv); err != nil {
			return err
		}
	}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("scenario %s with flags: %w", spec.Name, err)
	}
	return nil
}

// applyLimiterFlags puts the limiter flags the user set over the scenario's limiter section.
func applyLimiterFlags(set func(string) bool, spec *scenarios.Spec, o runOptions) {
	if set("limiter") {
		spec.Limiter.Kind = scenarios.LimiterKind(o.limiter)
		// A scenario's coalescing transport is its token bucket's: another kind has none, so
		// switching kinds keeps working on a scenario that coalesces.
		if spec.Limiter.Kind != scenarios.KindTokenBucket {
			spec.Limiter.Transport = scenarios.TransportPlain
		}
	}
	if set("decision-timeout") {
		spec.Limiter.Timeout = scenarios.Duration(o.decisionTimeout)
	}
	if set("clock") {
		spec.Limiter.Clock = o.clock
	}
	if set("transport") {
		spec.Limiter.Transport = o.transport
	}
}
