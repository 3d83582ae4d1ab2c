//go:build faults

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"ratelab/cluster/clustertest"
	"ratelab/results"
	"ratelab/scenarios"
)

// briefDuration is how long TestEveryBuiltinRunsBriefly runs each built-in.
const briefDuration = 2 * time.Second

// briefRate caps a built-in's offered rate in the brief runs: they check that every built-in
// runs end to end and leaves a summary that adds up, not what the machine can carry.
const briefRate = 3000.0

// brief cuts a built-in to briefDuration at no more than briefRate, with every fault moved into
// the middle second of the run (same order, same kinds, shorter), and without a warm-up its
// brief run would outlast. A schedule cut more than tenfold keeps its first fault only: its
// later faults wait for the cluster to recover from earlier ones (a restart of the killed node),
// which no compressed schedule leaves time for; the soak's own schedule runs in the fault tests.
func brief(s *scenarios.Spec) {
	full := time.Duration(s.Duration)
	if full > 10*briefDuration && len(s.Faults) > 1 {
		s.Faults = s.Faults[:1]
	}
	s.Duration = scenarios.Duration(briefDuration)
	s.Load.Rate = min(s.Load.Rate, briefRate)
	s.SLO.Warmup = nil
	scale := float64(time.Second) / float64(full)
	for i := range s.Faults {
		f := &s.Faults[i]
		f.At = scenarios.Duration(500*time.Millisecond + time.Duration(float64(f.At)*scale))
		if f.For > 0 {
			f.For = scenarios.Duration(max(100*time.Millisecond, time.Duration(float64(f.For)*scale)))
		}
		f.Slots = min(f.Slots, 5)
	}
}

// TestEveryBuiltinRunsBriefly runs every built-in scenario through the CLI for about two seconds
// (briefly: see brief) and checks what it left (the fault tier: two dozen clusters take a minute
// or two, and most built-ins inject faults): the run files, a summary of that scenario whose
// outcomes add up to its decisions, a row per second, every fault injected and none failed, and
// HTTP runs recorded as such. A built-in that no longer parses, validates or runs fails here,
// whoever changed the engine under it.
func TestEveryBuiltinRunsBriefly(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Redis Cluster per built-in")
	}
	t.Parallel()
	dir := t.TempDir()
	for _, name := range scenarios.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clustertest.Watch(t)
			spec, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			brief(spec)
			file := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(file, spec.YAML(), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, name)
			code, _, stderr := runBinary(t, dir, "run", file, "--out", out, "-q")
			if code != 0 && code != exitSLOFailed {
				t.Fatalf("ratelab run %s (brief): exit %d\n%s", name, code, stderr)
			}
			checkBriefRun(t, spec, out)
		})
	}
}

func checkBriefRun(t *testing.T, spec *scenarios.Spec, dir string) {
	t.Helper()
	for _, f := range []string{results.SummaryFile, results.TimeseriesFile, results.ScenarioFile, results.HistogramFile, "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	sum, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	clustertest.RecordLag(t, sum.Load.ScheduleLagP99Ms)
	o := sum.Outcomes
	if sum.Scenario != spec.Name || sum.Load.Completed == 0 || o.Allowed+o.Denied+o.FailedOpen+o.FailedClosed+o.Errors != sum.Load.Completed {
		t.Errorf("scenario %q, load %+v, outcomes %+v: want %s's decisions, its outcomes adding up to them", sum.Scenario, sum.Load, o, spec.Name)
	}
	if rows := readRows(t, dir); len(rows) != int(briefDuration/time.Second) {
		t.Errorf("%d rows, want one per second of %v", len(rows), briefDuration)
	}
	if len(sum.Faults) != len(spec.Faults) {
		t.Errorf("faults %+v: want the %d scheduled", sum.Faults, len(spec.Faults))
	}
	for _, f := range sum.Faults {
		if f.Failed {
			t.Errorf("fault %s on %s failed: %s", f.Kind, f.Target, f.Error)
		}
	}
	if via := sum.Environment.Via; (spec.Via == scenarios.ViaHTTP) != (via == scenarios.ViaHTTP) {
		t.Errorf("environment.via %q for a scenario with via %q", via, spec.Via)
	}
}

// readRows reads a run directory's timeseries.csv.
func readRows(t *testing.T, dir string) []results.Interval {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.TimeseriesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := results.ReadTimeseries(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
