package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/results"
)

// runBinary runs the built ratelab and returns its exit code, stdout and stderr.
func runBinary(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

func TestRunPartFlagRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ have, wantText string }{
		{"2/2", "want 0 <= index < 2"},
		{"1", "write INDEX/COUNT"},
		{"x/3", "whole numbers"},
		{"0/0", "want 1 or more generators"},
		{"0/5000", "1000 tenants"}, // smoke has 1,000 tenants
	}
	for _, tt := range tests {
		code, _, stderr := runBinary(t, t.TempDir(), "run", "smoke", "--limiter", "memory", "--part", tt.have)
		if code != 1 || !strings.Contains(stderr, "--part") || !strings.Contains(stderr, tt.have) || !strings.Contains(stderr, tt.wantText) {
			t.Errorf("run --part %s: exit %d, stderr %q; want exit 1 naming --part, %s and %q", tt.have, code, stderr, tt.have, tt.wantText)
		}
	}
}

// Two parts through the CLI, merged: one run directory with its report; a part passed twice is
// refused.
func TestPartAndMergeCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, sh := range []string{"0/2", "1/2"} {
		out := "s" + sh[:1]
		if code, _, stderr := runBinary(t, dir, "run", "smoke", "--limiter", "memory", "--duration", "2s", "--rate", "1000",
			"--part", sh, "--out", out, "-q"); code != 0 {
			t.Fatalf("run --part %s: exit %d: %s", sh, code, stderr)
		}
	}
	code, stdout, stderr := runBinary(t, dir, "merge", "--out", "merged", "s0", "s1")
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, filepath.Join("merged", "report.html")) || !strings.Contains(stdout, "merged from parts 0,1 of 2") {
		t.Errorf("merge stdout does not read like a run's summary with its report:\n%s", stdout)
	}
	for _, f := range []string{"report.html", "report.md", "latency.png", results.TimeseriesFile, results.LedgerFile, results.LatencyLogFile, results.PercentilesFile} {
		if _, err := os.Stat(filepath.Join(dir, "merged", f)); err != nil {
			t.Errorf("merged run lacks %s: %v", f, err)
		}
	}
	sum, err := results.ReadSummary(filepath.Join(dir, "merged", results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	s0, _ := results.ReadSummary(filepath.Join(dir, "s0", results.SummaryFile))
	s1, _ := results.ReadSummary(filepath.Join(dir, "s1", results.SummaryFile))
	if s0 == nil || s1 == nil || sum.Load.Decisions != s0.Load.Decisions+s1.Load.Decisions || sum.Part == nil || len(sum.Part.Merged) != 2 {
		t.Errorf("merged decisions %d part %+v; want the sum of the parts'", sum.Load.Decisions, sum.Part)
	}
	code, _, stderr = runBinary(t, dir, "merge", "--out", "twice", "s0", "s0")
	if code != 1 || !strings.Contains(stderr, "both part 0/2") {
		t.Errorf("merge s0 s0: exit %d, %q; want exit 1 refusing overlapping parts", code, stderr)
	}
}
