package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// Two parts through the CLI, started together by --start-at, and merged with --parts by a merge
// started with them that waits (--wait) until both have finished: one run directory with its
// report, the parts' seconds aligned; a part passed twice is refused.
func TestPartAndMergeCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	var parts []*exec.Cmd
	var errs []*strings.Builder
	// One absolute instant for both (+3s would be each process's own now plus 3 s).
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	for _, sh := range []string{"0/2", "1/2"} {
		c := exec.Command(binary, "run", "smoke", "--limiter", "memory", "--duration", "2s", "--rate", "1000",
			"--part", sh, "--start-at", at, "--out", filepath.Join(run, "part-"+sh[:1]), "-q")
		var stderr strings.Builder
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		parts, errs = append(parts, c), append(errs, &stderr)
	}
	merge := exec.Command(binary, "merge", "--out", "merged", "--parts", "run", "--wait", "60s")
	merge.Dir = dir
	var stdoutB, stderrB strings.Builder
	merge.Stdout, merge.Stderr = &stdoutB, &stderrB
	if err := merge.Start(); err != nil {
		t.Fatal(err)
	}
	for i, c := range parts {
		if err := c.Wait(); err != nil {
			t.Fatalf("run --part %d/2: %v: %s", i, err, errs[i])
		}
	}
	werr := merge.Wait()
	stdout, stderr := stdoutB.String(), stderrB.String()
	if werr != nil || !strings.Contains(stderr, "ratelab merge: waiting up to") {
		t.Fatalf("merge --parts run --wait 60s, started with the parts: %v: %s; want exit 0 after saying what it waits for", werr, stderr)
	}
	if !strings.Contains(stdout, filepath.Join("merged", "report.html")) || !strings.Contains(stdout, "merged from parts 0,1 of 2") {
		t.Errorf("merge stdout does not read like a run's summary with its report:\n%s", stdout)
	}
	for _, f := range []string{"report.html", "report.md", "latency.png", results.TimeseriesFile, results.TallyFile, results.LatencyLogFile, results.PercentilesFile} {
		if _, err := os.Stat(filepath.Join(dir, "merged", f)); err != nil {
			t.Errorf("merged run lacks %s: %v", f, err)
		}
	}
	sum, err := results.ReadSummary(filepath.Join(dir, "merged", results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	s0, _ := results.ReadSummary(filepath.Join(run, "part-0", results.SummaryFile))
	s1, _ := results.ReadSummary(filepath.Join(run, "part-1", results.SummaryFile))
	if s0 == nil || s1 == nil || sum.Load.Completed != s0.Load.Completed+s1.Load.Completed || sum.Part == nil || len(sum.Part.Merged) != 2 {
		t.Fatalf("merged decisions %d part %+v; want the sum of the parts'", sum.Load.Completed, sum.Part)
	}
	if !s0.StartedAt.Equal(s1.StartedAt) || !strings.Contains(s0.Load.Note, "--start-at") || strings.Contains(sum.Load.Note, "WARNING") {
		t.Errorf("--start-at: parts started at %s and %s (notes %q), merged note %q; want one start, said, and no warning",
			s0.StartedAt, s1.StartedAt, s0.Load.Note, sum.Load.Note)
	}
	code, _, stderr := runBinary(t, dir, "merge", "--out", "twice", "run/part-0", "run/part-0")
	if code != 1 || !strings.Contains(stderr, "both part 0/2") {
		t.Errorf("merge part-0 part-0: exit %d, %q; want exit 1 refusing overlapping parts", code, stderr)
	}
	code, _, stderr = runBinary(t, dir, "merge", "--out", "both", "--parts", "run", "run/part-0")
	if code != 1 || !strings.Contains(stderr, "--parts run and directories") {
		t.Errorf("merge --parts and a list: exit %d, %q; want exit 1 asking for one of them", code, stderr)
	}
}

// merge --wait gives up after its time when parts never come, naming what is missing; a wrong
// set of parts is refused at once, not waited on.
func TestMergeWaitGivesUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "run", "part-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	code, _, stderr := runBinary(t, dir, "merge", "--parts", "run", "--wait", "3s")
	if took := time.Since(began); code != 1 || took < 3*time.Second || took > 30*time.Second ||
		!strings.Contains(stderr, "after waiting 3s (--wait)") || !strings.Contains(stderr, "no summary.json yet") {
		t.Errorf("merge --wait 3s on a part that never ends: exit %d after %s, %q; want exit 1 after about 3 s naming the part without its summary", code, took, stderr)
	}
	code, _, stderr = runBinary(t, dir, "merge", "--wait", "3s", "run/part-0")
	if code != 1 || !strings.Contains(stderr, "--wait 3s: only --parts") {
		t.Errorf("merge --wait with a list: exit %d, %q; want exit 1 asking for --parts", code, stderr)
	}
}
