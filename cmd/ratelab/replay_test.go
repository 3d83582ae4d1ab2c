package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/results"
)

// `ratelab run --record-trace` then `ratelab run --trace` as a user runs them, on the in-process
// twin with the schedule clock: the replay reproduces the run's outcomes exactly; then the same
// trace through the gateway (--via http) adds up and is recorded as via http.
func TestRunRecordThenReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte(`
name: rec
duration: 2s
load: {rate: 500, concurrency: 8, max_inflight: 1024}
tenants: {count: 5}
endpoints: [{name: read, weight: 1}]
policy: {rate: 60, burst: 2}
limiter: {kind: memory, clock: schedule}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, "rec.trace")
	run := func(out string, args ...string) *results.Summary {
		t.Helper()
		b, err := exec.Command(binary, append([]string{"run", scenario, "-q", "--out", out}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("run %v: %v\n%s", args, err, b)
		}
		s, err := results.ReadSummary(filepath.Join(out, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	orig := run(filepath.Join(dir, "orig"), "--record-trace", tr)
	if info, err := exec.Command(binary, "trace", "info", tr).CombinedOutput(); err != nil || !strings.Contains(string(info), "requests   1000 ") {
		t.Fatalf("trace info after --record-trace: %v\n%s (want the 1000 recorded requests)", err, info)
	}
	rep := run(filepath.Join(dir, "rep"), "--trace", tr)
	if orig.Load.Dropped != 0 || rep.Outcomes != orig.Outcomes || orig.Outcomes.Denied == 0 {
		t.Errorf("replay outcomes %+v, recorded %+v (dropped %d): want equal, with denials", rep.Outcomes, orig.Outcomes, orig.Load.Dropped)
	}
	viaHTTP := run(filepath.Join(dir, "http"), "--trace", tr, "--via", "http", "--clock", "gateway")
	if viaHTTP.Environment.Via != "http" || viaHTTP.Load.Completed != 1000 {
		t.Errorf("via http: environment %+v, %d decisions; want via http and the trace's 1000", viaHTTP.Environment, viaHTTP.Load.Completed)
	}
	if _, err := os.Stat(filepath.Join(dir, "http", "report.html")); err != nil {
		t.Errorf("via http run has no report: %v", err)
	}
	b, err := exec.Command(binary, "run", scenario, "-q", "--trace", tr, "--rate", "10").CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(b), "drop --rate") {
		t.Errorf("--trace with --rate: exit %d, output %q: want a refusal naming --rate", exitCode(err), b)
	}
}
