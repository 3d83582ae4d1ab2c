// Package wild runs one seeded trace through ratelab's own limiters and the limiters people run
// (go-redis/redis_rate, a gubernator cluster in its batching and global behaviours), each without
// and with one fault, and tabulates and plots them side by side (`ratelab in-the-wild`). Each
// run is an ordinary engine run judged by its kind's own envelope.
//
// Every fault is a scenario fault the engine's fault runner injects: for the Redis kinds a
// kill-primary of the hottest tenant's primary; for a gubernator run a kill of daemon:0
// restarted after Outage (or, with Options.DaemonFault, its pause or its partition off its
// peers for Outage). Each is then an event of the run's summary with its detection and recovery,
// and the overspend of its window is booked on its cause.
package wild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// Variant is one limiter of the comparison.
type Variant struct {
	// Name labels the row: the kind, and gubernator's behaviour.
	Name     string
	Kind     scenarios.LimiterKind
	Behavior limiter.GubernatorBehavior // kind gubernator only
}

// DefaultVariants are the limiters `in-the-wild` runs, in table order.
var DefaultVariants = []Variant{
	{Name: "token-bucket", Kind: scenarios.KindTokenBucket},
	{Name: "gcra", Kind: scenarios.KindGCRA},
	{Name: "redis-rate", Kind: scenarios.KindRedisRate},
	{Name: "gubernator-batching", Kind: scenarios.KindGubernator, Behavior: limiter.GubernatorBatching},
	{Name: "gubernator-global", Kind: scenarios.KindGubernator, Behavior: limiter.GubernatorGlobal},
}

// Options configure Run.
type Options struct {
	// Out is the output directory: runs/<variant>[-fault]/, table.md, burst.png.
	Out string
	// Variants default to DefaultVariants.
	Variants []Variant
	// NoFaults runs each variant without a fault only.
	NoFaults bool
	// FaultAt is when the fault starts (default a third of the duration); Outage how long a
	// gubernator daemon's fault lasts (default 2s).
	FaultAt, Outage time.Duration
	// DaemonFault is a gubernator run's fault of daemon:0: kill (the default), pause or
	// partition.
	DaemonFault scenarios.FaultKind
	Version     string
	Logf        func(string, ...any)
}

// Row is one run of the comparison.
type Row struct {
	Variant Variant
	// Fault names the fault ("" for none).
	Fault   string
	Dir     string
	Summary *results.Summary
	// Daemons and SyncWait are a gubernator run's cluster size and GLOBAL sync period.
	Daemons  int
	SyncWait time.Duration
	// Rate is the policy's refill rate (tokens/s).
	Rate float64
	Err  string
}

// Run runs spec as every variant, without and (unless NoFaults) with its fault, into opts.Out,
// and writes table.md and burst.png there. An interrupt keeps what ran.
func Run(ctx context.Context, spec *scenarios.Spec, opts Options) ([]Row, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if len(opts.Variants) == 0 {
		opts.Variants = DefaultVariants
	}
	d := time.Duration(spec.Duration)
	if opts.FaultAt <= 0 {
		opts.FaultAt = (d / 3).Truncate(time.Second)
	}
	if opts.Outage <= 0 {
		opts.Outage = 2 * time.Second
	}
	if opts.DaemonFault == "" {
		opts.DaemonFault = scenarios.FaultKill
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	var rows []Row
	for _, v := range opts.Variants {
		for _, faulted := range []bool{false, true} {
			if faulted && opts.NoFaults {
				continue
			}
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
			rows = append(rows, runOne(ctx, spec, v, faulted, opts))
		}
	}
	if err := os.WriteFile(filepath.Join(opts.Out, "table.md"), []byte(Table(rows)), 0o644); err != nil {
		return rows, err
	}
	return rows, Plot(rows, filepath.Join(opts.Out, "burst.png"))
}

// SpecFor is spec as variant v, with its fault when faulted, defaulted and validated: the
// Redis kinds' kill-primary of the hottest tenant's primary at opts.FaultAt, or a gubernator
// run's opts.DaemonFault of daemon:0 at opts.FaultAt for opts.Outage (Run's defaults).
func SpecFor(spec *scenarios.Spec, v Variant, faulted bool, opts Options) (*scenarios.Spec, error) {
	s := *spec
	s.Faults = nil
	s.Limiter.Kind = v.Kind
	s.Limiter.Clock = ""
	s.Limiter.Gubernator = nil
	at := scenarios.Duration(opts.FaultAt)
	if v.Kind == scenarios.KindGubernator {
		g := scenarios.GubernatorCfg{}
		if spec.Limiter.Gubernator != nil {
			g = *spec.Limiter.Gubernator
		}
		g.Behavior = string(v.Behavior)
		s.Limiter.Gubernator = &g
		if faulted {
			s.Faults = []scenarios.FaultSpec{{At: at, Kind: opts.DaemonFault, Target: "daemon:0", For: scenarios.Duration(opts.Outage)}}
		}
	} else if faulted {
		s.Faults = []scenarios.FaultSpec{{At: at, Kind: scenarios.FaultKillPrimary, Target: "hottest"}}
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s as %s: %w", spec.Name, v.Name, err)
	}
	return &s, nil
}

// runOne runs one variant, with its fault when faulted.
func runOne(ctx context.Context, spec *scenarios.Spec, v Variant, faulted bool, opts Options) Row {
	r := Row{Variant: v}
	name := v.Name
	if faulted {
		r.Fault = string(scenarios.FaultKillPrimary)
		if v.Kind == scenarios.KindGubernator {
			r.Fault = fmt.Sprintf("%s daemon 0 for %v", opts.DaemonFault, opts.Outage)
		}
		name += "-fault"
	}
	r.Dir = filepath.Join(opts.Out, "runs", name)
	s, err := SpecFor(spec, v, faulted, opts)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Rate = s.BucketPolicy().Rate
	if g := s.Limiter.Gubernator; g != nil && v.Kind == scenarios.KindGubernator {
		r.Daemons, r.SyncWait = g.Daemons, time.Duration(g.SyncWait)
	}
	opts.Logf("in the wild: %s%s -> %s", v.Name, map[bool]string{true: " with " + r.Fault}[faulted], r.Dir)
	res, err := engine.Run(ctx, s, engine.Options{Out: r.Dir, Version: opts.Version, Logf: opts.Logf})
	if res != nil {
		r.Summary = res.Summary
	}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}
