package bench

import (
	"context"
	"fmt"

	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// runScenario runs a built-in scenario for opts' duration into dir (a temp directory: the bench
// keeps only its numbers). provider "running" attaches to the bench's cluster through state.
func runScenario(ctx context.Context, name, state, dir string, opts Options) (*results.Summary, error) {
	spec, err := scenarios.Builtin(name)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	spec.Duration = scenarios.Duration(2 * opts.Seconds)
	if state != "" {
		spec.Cluster.Provider = "running"
	}
	res, err := engine.Run(ctx, spec, engine.Options{Out: dir, StateFile: state, Version: opts.Version})
	if err != nil {
		return nil, fmt.Errorf("bench: scenario %s: %w", name, err)
	}
	return res.Summary, nil
}

// measureGenerator is section 1: the built-in generator scenario (a no-op limiter, 2,000,000/s
// offered over 10,000 Zipf tenants) with intended-time scheduling and HDR recording.
func measureGenerator(ctx context.Context, opts Options, dir string) (Generator, error) {
	sum, err := runScenario(ctx, "generator", "", dir, opts)
	if err != nil {
		return Generator{}, err
	}
	return Generator{
		OfferedRPS: sum.Load.OfferedRPS, DecisionsPerSec: sum.Load.AchievedRPS, Dropped: sum.Load.Dropped,
		ScheduleLagP99: sum.Load.ScheduleLagP99Ms, LatencyP99Ms: sum.LatencyMs.P99,
	}, nil
}

// measureLease is section 5: the built-in hot-tenant-lease scenario (100,000 offered, 2 gateways x
// 100-token leases) against the bench's cluster.
func measureLease(ctx context.Context, opts Options, state, dir string) (Lease, error) {
	sum, err := runScenario(ctx, "hot-tenant-lease", state, dir, opts)
	if err != nil {
		return Lease{}, err
	}
	l := Lease{
		OfferedRPS: sum.Load.OfferedRPS, AchievedRPS: sum.Load.AchievedRPS, Dropped: sum.Load.Dropped,
		Errors: sum.Outcomes.Errors, P50Ms: sum.LatencyMs.P50, P99Ms: sum.LatencyMs.P99,
		CentralOpsPS: sum.Central.OpsPerS,
	}
	if l.OfferedRPS > 0 {
		l.Achieved = l.AchievedRPS / l.OfferedRPS
	}
	return l, nil
}

// measureOpenLoop is section 3's open-loop row: the built-in hot-tenant (100,000 offered over
// Zipf hot tenants, the coalescing transport) against the bench's cluster, as `ratelab run`
// drives it. Beside the closed-loop variants on one primary it shows what the open loop over
// three primaries costs: latency from each request's intended start, the CPU per decision of
// the generator, the primaries and the replicas, and the pipeline depth the primaries saw.
func measureOpenLoop(ctx context.Context, opts Options, state, dir string) (OpenLoop, error) {
	sum, err := runScenario(ctx, "hot-tenant", state, dir, opts)
	if err != nil {
		return OpenLoop{}, err
	}
	o := OpenLoop{OfferedRPS: sum.Load.OfferedRPS, AchievedRPS: sum.Load.AchievedRPS,
		P50Ms: sum.LatencyMs.P50, P99Ms: sum.LatencyMs.P99}
	if sum.CPU == nil {
		return o, nil
	}
	o.CPU = sum.CPU.PerDecision
	var n int
	for _, node := range sum.CPU.Nodes {
		if node.CallsPerRead > 0 {
			o.CallsPerRead += node.CallsPerRead
			n++
		}
	}
	if n > 0 {
		o.CallsPerRead /= float64(n)
	}
	return o, nil
}
