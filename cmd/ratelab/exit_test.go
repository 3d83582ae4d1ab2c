package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/results"
)

// The exit code of a run whose files are written: 130 if interrupted, else 4 if a fault
// failed, else 3 if an SLO check failed, else 0; the message names what failed.
func TestRunVerdict(t *testing.T) {
	t.Parallel()
	failedFault := results.Fault{AtS: 5, Kind: "reshard", Target: "300 slots node:0 -> node:1", Failed: true, Error: "node:0 serves 0 slots"}
	okFault := results.Fault{AtS: 2, Kind: "pause", Target: "node:2 = 127.0.0.1:7002 (primary)"}
	failedSLO := results.SLO{Pass: false, Checks: []results.Check{{Name: "p99_ms <=", Limit: 5, Value: 9}}}
	tests := []struct {
		name     string
		sum      results.Summary
		code     int
		contains []string
	}{
		{"clean", results.Summary{SLO: results.SLO{Pass: true}, Faults: []results.Fault{okFault}}, 0, nil},
		{"SLO failed", results.Summary{SLO: failedSLO, Faults: []results.Fault{okFault}}, exitSLOFailed, []string{"SLO failed: p99_ms <= 5 (was 9)"}},
		{"fault failed", results.Summary{SLO: results.SLO{Pass: true}, Faults: []results.Fault{okFault, failedFault}}, exitFaultFailed,
			[]string{"fault failed: reshard at 5.0s on 300 slots node:0 -> node:1: node:0 serves 0 slots", "did not test what the scenario asked", "DIR"}},
		{"fault and SLO failed", results.Summary{SLO: failedSLO, Faults: []results.Fault{failedFault}}, exitFaultFailed,
			[]string{"fault failed: reshard", "its SLO failed too: p99_ms <= 5 (was 9)"}},
		{"interrupted", results.Summary{Interrupted: true, SLO: failedSLO, Faults: []results.Fault{failedFault}}, exitInterrupted, []string{"interrupted"}},
	}
	for _, tt := range tests {
		err := runVerdict("DIR", &tt.sum)
		checkExit(t, tt.name, err, tt.code, tt.contains)
	}
	// --repeat: a failed fault in any repetition wins over a failed SLO in another.
	sums := []*results.Summary{
		{SLO: failedSLO},
		{SLO: results.SLO{Pass: true}, Faults: []results.Fault{failedFault}},
		{SLO: results.SLO{Pass: true}},
	}
	checkExit(t, "repeat", repeatVerdict("OUT", sums), exitFaultFailed, []string{"fault failed in rep-02: reshard at 5.0s", "OUT"})
	checkExit(t, "repeat without failed faults", repeatVerdict("OUT", []*results.Summary{sums[0], sums[2]}), exitSLOFailed, []string{"SLO failed in rep-01"})
	checkExit(t, "repeat clean", repeatVerdict("OUT", sums[2:]), 0, nil)
}

func checkExit(t *testing.T, name string, err error, code int, contains []string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Errorf("%s: %v, want no error", name, err)
		}
		return
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != code {
		t.Errorf("%s: %v, want exit code %d", name, err, code)
		return
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %q lacks %q", name, err, s)
		}
	}
}

// A fault that cannot be carried out makes `ratelab run` exit 4 after writing every file,
// naming the fault, and summary.json marks it failed — alone, with --repeat and via: http. The
// fault is a failover on an external cluster without replicas: nothing before the run can rule
// it out (the scenario's topology, 3x1 by default, says nothing of an external cluster's).
func TestFailedFaultExits4(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Redis Cluster and three runs")
	}
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 0})
	dir := t.TempDir()
	file := filepath.Join(dir, "failover.yaml")
	if err := os.WriteFile(file, []byte(`name: failover-without-replica
duration: 2s
load: {rate: 200, concurrency: 4, max_inflight: 512}
tenants: {count: 50}
endpoints: [{name: read, weight: 1}]
policy: {rate: 20, burst: 40}
faults:
  - {at: 500ms, kind: failover, target: node:1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "redis://" + l.Addrs()[0]
	tests := []struct {
		name string
		args []string
		sums []string // summary.json files under the run's directory
	}{
		{"run", nil, []string{results.SummaryFile}},
		{"repeat", []string{"--repeat", "2"}, []string{filepath.Join("rep-01", results.SummaryFile), filepath.Join("rep-02", results.SummaryFile)}},
		{"via http", []string{"--via", "http"}, []string{results.SummaryFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			args := append([]string{"run", file, "--cluster", url, "--allow-faults", "--out", out, "-q"}, tt.args...)
			code, stdout, stderr := runBinary(t, dir, args...)
			if code != exitFaultFailed {
				t.Fatalf("ratelab %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, exitFaultFailed, stdout, stderr)
			}
			if !strings.Contains(stderr, "fault failed") || !strings.Contains(stderr, "failover at") || !strings.Contains(stderr, "no running replica") {
				t.Errorf("stderr does not name the failed fault and why:\n%s", stderr)
			}
			for _, s := range tt.sums {
				sum, err := results.ReadSummary(filepath.Join(out, s))
				if err != nil {
					t.Fatalf("%s: %v", s, err)
				}
				if len(sum.Faults) != 1 || !sum.Faults[0].Failed || !strings.Contains(sum.Faults[0].Error, "no running replica") ||
					!strings.Contains(sum.Faults[0].Target, l.Addrs()[1]) {
					t.Errorf("%s: faults %+v, want the failover marked failed, its error, and node 1 (%s) in its target", s, sum.Faults, l.Addrs()[1])
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Join(out, s)), "report.html")); err != nil {
					t.Errorf("a run with a failed fault writes every file before it exits: %v", err)
				}
			}
		})
	}
}
