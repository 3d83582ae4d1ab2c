package tradeoff

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// DefaultDurabilityScenario is the built-in a durability run rewrites: a primary isolated
// from the rest of its cluster, then healed.
const DefaultDurabilityScenario = "partition"

// Faults of the durability matrix.
const (
	// FaultPartition keeps the scenario's partition fault.
	FaultPartition = string(scenarios.FaultPartition)
	// FaultKillPrimary replaces each partition with a kill-primary of the same target at the
	// same time, and its heal with a restart of the killed node.
	FaultKillPrimary = string(scenarios.FaultKillPrimary)
)

// Settings of the durability matrix: limiter.durability's values, and min-replicas (async
// decisions, the primaries' min-replicas-to-write set).
const (
	SettingAsync        = scenarios.DurabilityAsync
	SettingWait         = scenarios.DurabilityWait
	SettingWaitPipeline = scenarios.DurabilityWaitPipeline
	SettingMinReplicas  = "min-replicas"
)

// DurabilityFaults and DurabilitySettings are the matrix's defaults, in the order of its rows.
var (
	DurabilityFaults   = []string{FaultKillPrimary, FaultPartition}
	DurabilitySettings = []string{SettingAsync, SettingWait, SettingWaitPipeline, SettingMinReplicas}
)

// MinReplicasMaxLag is min-replicas-max-lag for the min-replicas setting when the scenario
// sets none: Redis counts the lag in whole seconds, and 1 s is the least it can express.
const MinReplicasMaxLag = time.Second

// DurabilityOptions are the knobs of a durability matrix.
type DurabilityOptions struct {
	// Faults and Settings span the matrix; default DurabilityFaults and DurabilitySettings.
	Faults, Settings []string
	// Duration of every run; 0 keeps the scenario's. A shorter run scales its fault schedule
	// (see Shorten).
	Duration time.Duration
	// Out is the matrix's directory (runs go to Out/runs/); default out/durability-<time>.
	Out string
	// Version is ratelab's version, recorded in each run's summary.
	Version string
	// Logf receives progress; nil is silent.
	Logf func(format string, args ...any)
}

// DurabilityPlan is one run of base per fault and setting, faults outer. Unknown names, and a
// base without a primary's partition, are an error; a rewrite the spec's validation refuses is
// a Plan whose Run says so.
func DurabilityPlan(base *scenarios.Spec, faults, settings []string, duration time.Duration) ([]Plan, error) {
	if len(faults) == 0 {
		faults = DurabilityFaults
	}
	if len(settings) == 0 {
		settings = DurabilitySettings
	}
	if err := checkNames("--faults", faults, DurabilityFaults); err != nil {
		return nil, err
	}
	if err := checkNames("--settings", settings, DurabilitySettings); err != nil {
		return nil, err
	}
	if duration != 0 && duration < time.Second {
		return nil, fmt.Errorf("--duration %v: must be at least 1s", duration)
	}
	// Without a primary's partition no row can run: the scenario is wrong, not a setting.
	if _, err := WithFault(base, FaultPartition); err != nil {
		return nil, err
	}
	var plans []Plan
	for _, f := range faults {
		for _, st := range settings {
			run := results.StudyRun{Fault: f, Setting: st}
			s, err := WithFault(base, f)
			if err == nil {
				err = WithSetting(&s, st)
			}
			if err == nil {
				Shorten(&s, duration)
				err = revalidate(&s, "fault "+f+", durability "+st)
			}
			if err != nil {
				run.Err = err.Error()
			}
			plans = append(plans, Plan{Run: run, Name: f + "-" + st, Spec: s})
		}
	}
	return plans, nil
}

// checkNames reports the first of names that is not one of allowed, naming the flag.
func checkNames(flag string, names, allowed []string) error {
	for _, n := range names {
		if !slices.Contains(allowed, n) {
			return fmt.Errorf("%s: %q is not one of %s", flag, n, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// WithFault returns a copy of base with the fault the matrix asks: partition keeps base's
// partition faults; kill-primary replaces each partition of a primary (not of gateways or a
// region) with a kill-primary of it at the same time and, where the partition heals inside the
// run, a restart of the killed node at the heal. base must hold a partition of a primary; it
// is not modified.
func WithFault(base *scenarios.Spec, fault string) (scenarios.Spec, error) {
	s := *base
	s.Faults = nil
	found := false
	for _, f := range base.Faults {
		if f.Kind != scenarios.FaultPartition || !f.OnCluster() {
			s.Faults = append(s.Faults, f)
			continue
		}
		found = true
		if fault == FaultPartition {
			s.Faults = append(s.Faults, f)
			continue
		}
		s.Faults = append(s.Faults, scenarios.FaultSpec{At: f.At, Kind: scenarios.FaultKillPrimary, Target: f.Target})
		if heal := f.At + f.For; f.For > 0 && heal < base.Duration {
			s.Faults = append(s.Faults, scenarios.FaultSpec{At: heal, Kind: scenarios.FaultRestart, Target: "killed"})
		}
	}
	// A heal's restart may fall after faults that followed the partition: keep schedule order.
	slices.SortStableFunc(s.Faults, func(a, b scenarios.FaultSpec) int { return cmp.Compare(a.At, b.At) })
	if !found {
		return s, fmt.Errorf("scenario %s: faults: no partition of a primary to keep or replace; use the %s built-in or a file with one (kind: partition, target: hottest or node:N)", base.Name, DefaultDurabilityScenario)
	}
	return s, nil
}

// WithSetting sets s's durability: limiter.durability (wait-pipeline with the coalescing
// transport it waits after), or for min-replicas async decisions with every primary's
// min-replicas-to-write at 1 (max lag MinReplicasMaxLag unless s sets one). WAIT's replicas
// and timeout are kept for wait and wait-pipeline and cleared otherwise. It turns on the debit
// audit, so the run counts the tokens a fault returned, and refuses a setting that needs a
// replica on a cluster without one.
func WithSetting(s *scenarios.Spec, setting string) error {
	if setting != SettingAsync && s.Cluster.Replicas != nil && *s.Cluster.Replicas < 1 {
		return fmt.Errorf("scenario %s: cluster.replicas: 0: durability %s waits for a replica; use replicas: 1", s.Name, setting)
	}
	s.Limiter.Audit = true
	minReplicas, maxLag := s.Cluster.MinReplicasToWrite, s.Cluster.MinReplicasMaxLag
	s.Cluster.MinReplicasToWrite, s.Cluster.MinReplicasMaxLag = 0, 0
	switch setting {
	case SettingWait:
		s.Limiter.Durability = scenarios.DurabilityWait
	case SettingWaitPipeline:
		s.Limiter.Durability = scenarios.DurabilityWaitPipeline
		s.Limiter.Transport = scenarios.TransportCoalesce
	case SettingAsync, SettingMinReplicas:
		s.Limiter.Durability = scenarios.DurabilityAsync
		s.Limiter.DurabilityReplicas, s.Limiter.DurabilityTimeout = 0, 0
		if setting == SettingMinReplicas {
			s.Cluster.MinReplicasToWrite = max(minReplicas, 1)
			s.Cluster.MinReplicasMaxLag = cmp.Or(maxLag, scenarios.Duration(MinReplicasMaxLag))
		}
	default:
		return fmt.Errorf("durability setting %q: use one of %s", setting, strings.Join(DurabilitySettings, ", "))
	}
	return nil
}

// Shorten sets s's duration to d and scales its fault schedule by the same factor (each
// fault's at and for), so that the faults keep their place in the run; d = 0, or d no shorter
// than the run, leaves s as it is. The faults are s's own afterwards.
func Shorten(s *scenarios.Spec, d time.Duration) {
	full := time.Duration(s.Duration)
	if d <= 0 || full <= 0 || d >= full {
		return
	}
	// In floating point: the product of two durations in nanoseconds overflows int64.
	f := float64(d) / float64(full)
	scale := func(v scenarios.Duration) scenarios.Duration {
		return scenarios.Duration(time.Duration(float64(v) * f).Round(time.Millisecond))
	}
	faults := make([]scenarios.FaultSpec, len(s.Faults))
	for i, f := range s.Faults {
		f.At, f.For = scale(f.At), scale(f.For)
		faults[i] = f
	}
	s.Faults = faults
	s.Duration = scenarios.Duration(d)
}

// Durability runs DurabilityPlan(base, ...) into opts.Out and returns every run, failed ones
// included, and the directory; on an interrupt, the runs up to it and ctx's error.
func Durability(ctx context.Context, base *scenarios.Spec, opts DurabilityOptions) ([]results.StudyRun, string, error) {
	plans, err := DurabilityPlan(base, opts.Faults, opts.Settings, opts.Duration)
	if err != nil {
		return nil, "", err
	}
	out := cmp.Or(opts.Out, filepath.Join("out", "durability-"+time.Now().Format("20060102-150405")))
	runs, err := runAll(ctx, plans, out, opts.Version, logfOf(opts.Logf, "durability"))
	return runs, out, err
}
