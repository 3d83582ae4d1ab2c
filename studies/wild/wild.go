// Package wild runs one seeded trace through ratelab's own limiters and the limiters people run
// (go-redis/redis_rate, a gubernator cluster in its batching and global behaviours), each without
// and with one fault, and tabulates and plots them side by side (`ratelab in-the-wild`). Each
// run is an ordinary engine run judged by its kind's own envelope.
//
// The Redis kinds' fault is the scenario engine's kill-primary of the hottest tenant's primary.
// A gubernator run's fault is a kill of one daemon, restarted after Outage: the fault runner
// knows Redis Clusters only, so this package injects it itself from the per-second rows (it is
// then neither a cause in the overspend split nor in the summary's faults; the table counts the
// errors it caused).
package wild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"ratelab/cluster/gubernator"
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
	// killed gubernator daemon stays down (default 2s).
	FaultAt, Outage time.Duration
	Version         string
	Logf            func(string, ...any)
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

// SpecFor is spec as variant v, with its fault when faulted (the Redis kinds' kill-primary at
// at; a gubernator run's fault is injected by Run), defaulted and validated.
func SpecFor(spec *scenarios.Spec, v Variant, faulted bool, at time.Duration) (*scenarios.Spec, error) {
	s := *spec
	s.Faults = nil
	s.Limiter.Kind = v.Kind
	s.Limiter.Clock = ""
	s.Limiter.Gubernator = nil
	if v.Kind == scenarios.KindGubernator {
		g := scenarios.GubernatorCfg{}
		if spec.Limiter.Gubernator != nil {
			g = *spec.Limiter.Gubernator
		}
		g.Behavior = string(v.Behavior)
		s.Limiter.Gubernator = &g
	} else if faulted {
		s.Faults = []scenarios.FaultSpec{{At: scenarios.Duration(at), Kind: scenarios.FaultKillPrimary, Target: "hottest"}}
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s as %s: %w", spec.Name, v.Name, err)
	}
	return &s, nil
}

// runOne runs one variant, its fault injected where Run does it itself.
func runOne(ctx context.Context, spec *scenarios.Spec, v Variant, faulted bool, opts Options) Row {
	r := Row{Variant: v}
	name := v.Name
	if faulted {
		r.Fault = "kill-primary"
		if v.Kind == scenarios.KindGubernator {
			r.Fault = fmt.Sprintf("kill daemon 0 for %v", opts.Outage)
		}
		name += "-fault"
	}
	r.Dir = filepath.Join(opts.Out, "runs", name)
	s, err := SpecFor(spec, v, faulted, opts.FaultAt)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Rate = s.BucketPolicy().Rate
	if g := s.Limiter.Gubernator; g != nil && v.Kind == scenarios.KindGubernator {
		r.Daemons, r.SyncWait = g.Daemons, time.Duration(g.SyncWait)
	}
	opts.Logf("in the wild: %s%s -> %s", v.Name, map[bool]string{true: " with " + r.Fault}[faulted], r.Dir)
	res, err := runWithDaemonFault(ctx, s, faulted && v.Kind == scenarios.KindGubernator,
		engine.Options{Out: r.Dir, Version: opts.Version, Logf: opts.Logf}, opts)
	if res != nil {
		r.Summary = res.Summary
	}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

// runWithDaemonFault is engine.Run, with daemon 0 of the run's gubernator cluster killed once the
// row of second FaultAt-1 is written (about FaultAt into the load) and restarted Outage later.
func runWithDaemonFault(ctx context.Context, spec *scenarios.Spec, fault bool, eo engine.Options, opts Options) (*engine.Result, error) {
	if !fault {
		return engine.Run(ctx, spec, eo)
	}
	var c atomic.Pointer[gubernator.Cluster] // set once Open started it, before the first row
	var done atomic.Bool
	first := int(opts.FaultAt/time.Second) - 1
	eo.OnInterval = func(iv results.Interval) {
		if int(iv.TS) != first || done.Swap(true) {
			return
		}
		go killAndRestart(ctx, c.Load(), opts)
	}
	s, err := engine.Open(ctx, spec, eo)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	c.Store(s.Gubernator())
	m, driveErr := s.Drive(ctx)
	res, err := s.Finish(ctx, m)
	if driveErr != nil {
		return res, driveErr
	}
	return res, err
}

// killAndRestart kills daemon 0 and restarts it Outage later.
func killAndRestart(ctx context.Context, c *gubernator.Cluster, opts Options) {
	if err := c.Kill(0); err != nil {
		opts.Logf("in the wild: kill daemon 0: %v", err)
		return
	}
	opts.Logf("in the wild: daemon 0 killed")
	time.Sleep(opts.Outage)
	if err := c.Restart(context.WithoutCancel(ctx), 0); err != nil {
		opts.Logf("in the wild: restart daemon 0: %v", err)
		return
	}
	opts.Logf("in the wild: daemon 0 restarted")
}
