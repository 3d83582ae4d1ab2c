package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"ratelab/scenarios"
)

// execRatelab runs the built binary in dir and returns its exit code, stdout and stderr.
func execRatelab(t *testing.T, dir string, args ...string) (int, string, string) {
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

// TestDeprecatedSpellings: each old spelling still sets its new flag (and marks it changed, as
// the commands read it), and cobra says the new name.
func TestDeprecatedSpellings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		flag, want string
	}{
		{[]string{"attack", "--workers", "7"}, "concurrency", "7"},
		{[]string{"attack", "--max-workers", "9"}, "max-inflight", "9"},
		{[]string{"attack", "--timeout", "3s"}, "request-timeout", "3s"},
		{[]string{"gateway", "--rate", "5"}, "policy", "rate=5,burst=200"},
		{[]string{"gateway", "--burst", "7"}, "policy", "rate=100,burst=7"},
		{[]string{"gateway", "--burst", "7", "--rate", "5"}, "policy", "rate=5,burst=7"},
		{[]string{"gateway", "--timeout", "2s"}, "decision-timeout", "2s"},
		{[]string{"simulate", "--policy-rate", "5", "--policy-burst", "9"}, "policy", "rate=5,burst=9"},
		{[]string{"simulate", "--timeout", "20ms"}, "decision-timeout", "20ms"},
		{[]string{"simulate", "--json"}, "output", "json"},
		{[]string{"simulate", "validate", "--run-dir", "d"}, "out", "d"},
		{[]string{"simulate", "validate", "--json"}, "output", "json"},
		{[]string{"simulate", "calibrate", "--run-dir", "d"}, "out", "d"},
		{[]string{"capacity", "plan", "--json"}, "output", "json"},
		{[]string{"compare", "--format", "md"}, "output", "md"},
		{[]string{"trace", "gen", "--out", "f.trace"}, "file", "f.trace"},
		{[]string{"trace", "import", "--out", "f.trace"}, "file", "f.trace"},
	} {
		root := newRootCmd()
		var msgs bytes.Buffer
		root.SetOut(&msgs)
		cmd, rest, err := root.Find(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		f := cmd.Flags().Lookup(tc.flag)
		if f.Value.String() != tc.want || !f.Changed {
			t.Errorf("%v: --%s = %q (changed %v), want %q", tc.args, tc.flag, f.Value, f.Changed, tc.want)
		}
		if !strings.Contains(msgs.String(), "has been deprecated, use --"+tc.flag) {
			t.Errorf("%v: no deprecation naming --%s: %q", tc.args, tc.flag, msgs.String())
		}
	}
}

// TestCalibrateOldOutFile: calibrate's --out ending in .json without --file is the calibration
// file, as --out was before, with a warning naming --file; otherwise --out is the runs' directory.
func TestCalibrateOldOutFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args      []string
		file, out string
		warns     bool
	}{
		{[]string{"--out", "cal.json"}, "cal.json", "", true},
		{[]string{"--out", "runs"}, "calibration.json", "runs", false},
		{[]string{"--out", "runs.json", "--file", "c.json"}, "c.json", "runs.json", false},
	} {
		root := newRootCmd()
		cmd, _, err := root.Find([]string{"simulate", "calibrate"})
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o := calibrateOptions{}
		o.file, _ = cmd.Flags().GetString("file")
		o.out, _ = cmd.Flags().GetString("out")
		var stderr bytes.Buffer
		o = legacyCalibrateOut(cmd, o, &stderr)
		if o.file != tc.file || o.out != tc.out || (stderr.Len() > 0) != tc.warns {
			t.Errorf("%v: file %q out %q warning %q; want %q, %q, warning %v", tc.args, o.file, o.out, stderr.String(), tc.file, tc.out, tc.warns)
		}
		if tc.warns && !strings.Contains(stderr.String(), "--file "+tc.file) {
			t.Errorf("%v: the warning does not name --file: %q", tc.args, stderr.String())
		}
	}
}

// TestOutputFlag: -o json leaves only the JSON document on stdout (a deprecated spelling's
// notice goes to stderr), and an unknown format is refused naming the flag, the value and the
// formats the command has.
func TestOutputFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"version", "-o", "json"},
		{"capacity", "plan", "--target-rps", "100000", "--tenants", "1000", "-o", "json"},
		{"capacity", "plan", "--target-rps", "100000", "--tenants", "1000", "--json"},
	} {
		code, stdout, stderr := execRatelab(t, dir, args...)
		var v map[string]any
		if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil {
			t.Errorf("%v: exit %d, stdout is not one JSON document (%v):\n%s\nstderr %s", args, code, err, stdout, stderr)
		}
		if args[len(args)-1] == "--json" && !strings.Contains(stderr, "Flag --json has been deprecated, use --output instead") {
			t.Errorf("%v: stderr lacks the deprecation: %q", args, stderr)
		}
	}
	code, _, stderr := execRatelab(t, dir, "version", "-o", "yaml")
	for _, want := range []string{`"yaml"`, "--output", "text, json"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("version -o yaml: exit %d, stderr %q; want 1 and %q", code, stderr, want)
		}
	}
}

// TestCLIDocIsCurrent: docs/cli.md is what the command tree generates now. After changing a
// command, a flag or its help, run make docs.
func TestCLIDocIsCurrent(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := writeCLIDoc(&buf); err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../../" + cliDocFile)
	if err != nil {
		t.Fatalf("%v; run make docs", err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Fatalf("%s is out of date with the commands' help: run make docs (first difference at line %d)", cliDocFile, firstDiffLine(have, buf.Bytes()))
	}
}

// firstDiffLine is the 1-based line where a and b first differ.
func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// TestRunPolicyAndDecisionTimeout: run --policy replaces the scenario's bucket (a limit per
// window too), --decision-timeout its limiter.timeout; a scenario with tariffs refuses --policy.
func TestRunPolicyAndDecisionTimeout(t *testing.T) {
	t.Parallel()
	cmd, _, err := newRootCmd().Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	var o runOptions
	cmd.ResetFlags()
	o.addFlags(cmd)
	if err := cmd.ParseFlags([]string{"--policy", "rate=7,burst=11", "--decision-timeout", "20ms"}); err != nil {
		t.Fatal(err)
	}
	spec, err := scenarios.Resolve("smoke")
	if err != nil {
		t.Fatal(err)
	}
	if err := applyOverrides(cmd, spec, o); err != nil {
		t.Fatal(err)
	}
	if p := spec.BucketPolicy(); p.Rate != 7 || p.Burst != 11 || time.Duration(spec.Limiter.Timeout) != 20*time.Millisecond {
		t.Errorf("policy %+v, timeout %v; want rate 7 burst 11, 20ms", p, time.Duration(spec.Limiter.Timeout))
	}
	spec.Policy.File = "plans.yaml"
	if err := applyOverrides(cmd, spec, o); err == nil || !strings.Contains(err.Error(), "tariffs") {
		t.Errorf("--policy over tariffs: %v; want a refusal naming the tariffs", err)
	}
}
