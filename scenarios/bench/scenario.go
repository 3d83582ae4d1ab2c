package bench

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"ratelab/results"
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
	res, err := scenarios.Run(ctx, spec, scenarios.RunOptions{Out: dir, StateFile: state, Version: opts.Version})
	if err != nil {
		return nil, fmt.Errorf("bench: scenario %s: %w", name, err)
	}
	return res.Summary, nil
}

// runGenerator is section 1: the built-in generator scenario (a no-op limiter, 2,000,000/s
// offered over 10,000 Zipf tenants) with intended-time scheduling and HDR recording.
func runGenerator(ctx context.Context, opts Options, dir string) (Generator, error) {
	sum, err := runScenario(ctx, "generator", "", dir, opts)
	if err != nil {
		return Generator{}, err
	}
	lag, err := scheduleLagP99(sum.Load.Note)
	if err != nil {
		return Generator{}, err
	}
	return Generator{
		OfferedRPS: sum.Load.OfferedRPS, DecisionsPerSec: sum.Load.AchievedRPS, Dropped: sum.Load.Dropped,
		ScheduleLagP99: lag, LatencyP99Ms: sum.LatencyMs.P99,
	}, nil
}

// lagNote is how the engine states the schedule lag in load.note (scenarios/summary.go); the
// summary has no field for it.
var lagNote = regexp.MustCompile(`schedule lag p99 ([0-9.]+) ms`)

func scheduleLagP99(note string) (float64, error) {
	m := lagNote.FindStringSubmatch(note)
	if m == nil {
		return 0, fmt.Errorf("bench: the generator's load.note %q has no \"schedule lag p99 N ms\"", note)
	}
	return strconv.ParseFloat(m[1], 64)
}

// runLease is section 5: the built-in hot-tenant-lease scenario (100,000 offered, 2 gateways x
// 100-token leases) against the bench's cluster.
func runLease(ctx context.Context, opts Options, state, dir string) (Lease, error) {
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
