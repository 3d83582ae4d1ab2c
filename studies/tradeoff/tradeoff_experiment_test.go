//go:build experiment

package tradeoff

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ratelab/report"
	"ratelab/scenarios"
)

// The drivers end to end on real local clusters, with runs a few seconds long: every run
// measured, the summaries filled as the tables need, the tables and plots written.
// go test -tags experiment -run 'Sweep|Matrix' ./studies/tradeoff

func builtin(t *testing.T, name string) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatalf("%v: the built-in comes from the regions and partition work", err)
	}
	return s
}

func fmtAvail(a *float64) string {
	if a == nil {
		return "none"
	}
	return strconv.FormatFloat(*a, 'f', 4, 64)
}

func TestRegionsSweepShort(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runs, out, err := RegionsSweep(ctx, builtin(t, DefaultRegionsScenario), RegionsOptions{
		Periods: []time.Duration{500 * time.Millisecond}, Duration: 2 * time.Second, Out: dir, Logf: t.Logf,
	})
	if err != nil || out != dir || len(runs) != 3 {
		t.Fatalf("runs %d into %s, err %v; want 3 into %s", len(runs), out, err, dir)
	}
	for i, r := range runs {
		s := r.Summary
		if r.Err != "" || s == nil || s.Regions == nil {
			t.Fatalf("run %d (%s): err %q, summary %v; want a multi-region summary", i, r.Design, r.Err, s != nil)
		}
		if s.Regions.Design != Designs[i] || s.Regions.PeriodS != r.PeriodS || s.Seed != runs[0].Summary.Seed || len(s.Regions.List) != 3 {
			t.Errorf("run %d: design %s T %gs seed %d, %d regions; want %s, T %gs, the first run's seed %d, 3 regions",
				i, s.Regions.Design, s.Regions.PeriodS, s.Seed, len(s.Regions.List), Designs[i], r.PeriodS, runs[0].Summary.Seed)
		}
	}
	rows, err := report.WriteRegionsSweep(dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Error != "" || r.Allowed == 0 || r.WorstRegion == "" {
			t.Errorf("row %s: %+v; want allowed decisions and a worst region", r.Label, r)
		}
	}
	for _, f := range []string{"sweep.md", "sweep.csv", "sweep.json", "tradeoff.png", "tradeoff.svg", "index.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// An interrupt during the second run keeps the first whole and the second as far as it went,
// and runs no third.
func TestRegionsSweepInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	logf := func(format string, args ...any) {
		t.Logf(format, args...)
		if strings.Contains(format, "running ") && len(args) > 0 && args[0] == "regions-split" {
			once.Do(func() { time.AfterFunc(1500*time.Millisecond, cancel) })
		}
	}
	runs, _, err := RegionsSweep(ctx, builtin(t, DefaultRegionsScenario), RegionsOptions{
		Periods: []time.Duration{time.Second}, Duration: 4 * time.Second, Out: t.TempDir(), Logf: logf,
	})
	if !errors.Is(err, context.Canceled) || len(runs) != 2 {
		t.Fatalf("err %v, %d runs; want context.Canceled and 2 runs", err, len(runs))
	}
	if runs[0].Err != "" || runs[0].Summary == nil || runs[0].Summary.Interrupted {
		t.Errorf("first run: err %q; want it whole", runs[0].Err)
	}
	if s := runs[1].Summary; s == nil || !s.Interrupted || runs[1].Err == "" {
		t.Errorf("second run: %+v; want what it measured, marked interrupted", runs[1])
	}
}

func TestDurabilityMatrixShort(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	settings := []string{SettingAsync, SettingWait}
	runs, _, err := Durability(ctx, builtin(t, DefaultDurabilityScenario), DurabilityOptions{
		Settings: settings, Duration: 8 * time.Second, Out: dir, Logf: t.Logf,
	})
	if err != nil || len(runs) != len(DurabilityFaults)*len(settings) {
		t.Fatalf("%d runs, err %v; want %d", len(runs), err, len(DurabilityFaults)*len(settings))
	}
	for _, r := range runs {
		s := r.Summary
		if r.Err != "" || s == nil {
			t.Fatalf("%s/%s: %q", r.Fault, r.Setting, r.Err)
		}
		if s.TokensBack == nil || s.Environment.Durability != r.Setting || len(s.Faults) == 0 || s.Faults[0].Kind != r.Fault || s.Faults[0].Failed {
			t.Errorf("%s/%s: tokens back %v, durability %q, faults %+v; want tokens back counted, durability %s, first fault a %s that ran",
				r.Fault, r.Setting, s.TokensBack, s.Environment.Durability, s.Faults, r.Setting, r.Fault)
		}
	}
	rows, err := report.WriteDurability(dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	// The steady state here is one second: its p99 falls among the drops whenever a shared
	// machine stalls the generator for 1% of it, so only its median is required.
	for i, r := range rows {
		if r.Rank != i+1 || !r.SteadyP50Ms.Measurable() || r.FaultAvailability == nil || r.SteadyToS != 2 {
			t.Errorf("row %s: rank %d, steady p50 %v over %g..%gs, availability %v; want rank %d, measurable, up to the fault at 2s, an availability",
				r.Label, r.Rank, r.SteadyP50Ms, r.SteadyFromS, r.SteadyToS, fmtAvail(r.FaultAvailability), i+1)
		}
		t.Logf("%s: rank %d, tokens back %+v, steady p99 %v, availability in the fault window %s", r.Label, r.Rank, r.TokensBack, r.SteadyP99Ms, fmtAvail(r.FaultAvailability))
	}
}
