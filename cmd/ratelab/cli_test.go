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

// TestOldSpellingsFail: each old spelling of a flag or a command fails (exit 1) with a message
// naming its new one, typed as the user would, --help included.
func TestOldSpellingsFail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"attack", "--url", "http://127.0.0.1:1/", "--workers", "7"}, "--workers: it is --concurrency now"},
		{[]string{"attack", "--max-workers", "9"}, "it is --max-inflight now"},
		{[]string{"attack", "--timeout", "3s"}, "it is --request-timeout now"},
		{[]string{"gateway", "--rate", "5"}, "--rate: it is --policy rate=R,burst=B"},
		{[]string{"gateway", "--burst", "7"}, "it is --policy rate=R,burst=B"},
		{[]string{"gateway", "--timeout", "2s"}, "it is --decision-timeout now"},
		{[]string{"simulate", "predict", "--policy-rate", "5"}, "it is --policy rate=R,burst=B now"},
		{[]string{"simulate", "predict", "--policy-burst", "9"}, "it is --policy rate=R,burst=B now"},
		{[]string{"simulate", "predict", "--timeout", "20ms"}, "it is --decision-timeout now"},
		{[]string{"simulate", "predict", "--json"}, "--json: it is -o json now"},
		{[]string{"simulate", "validate", "--run-dir", "d"}, "--run-dir: it is --out now"},
		{[]string{"simulate", "validate", "--json"}, "it is -o json now"},
		{[]string{"simulate", "calibrate", "--run-dir", "d"}, "it is --out now"},
		{[]string{"simulate", "calibrate", "--out", "cal.json"}, "name the calibration file with --file cal.json"},
		{[]string{"capacity", "plan", "--target-rps", "1000", "--json"}, "it is -o json now"},
		{[]string{"compare", "--format", "md", "a", "b"}, "--format: it is -o FORMAT now"},
		{[]string{"trace", "gen", "--out", "f.trace"}, "--out: it is --file now"},
		{[]string{"trace", "import", "--out", "f.trace"}, "it is --file now"},
		{[]string{"simulate", "--shards", "30", "--rate", "5000000"}, "type 'ratelab simulate predict --primaries ...'"},
		{[]string{"simulate", "predict", "--shards", "30"}, "--shards: it is --primaries now"},
		{[]string{"simulate", "predict", "--failover-shard", "1"}, "it is --failover-primary now"},
		{[]string{"capacity", "plan", "--target-rps", "1000", "--per-shard-rps", "10"}, "it is --per-primary-rps now"},
		{[]string{"regions", "sweep"}, "'ratelab regions sweep' is now 'ratelab regions'"},
		{[]string{"regions", "sweep", "--periods", "1s", "--help"}, "is now 'ratelab regions'"},
		{[]string{"scenarios", "side-by-side", "algorithms-side-by-side"}, "is now 'ratelab side-by-side'"},
		{[]string{"scenarios", "in-the-wild", "--help"}, "is now 'ratelab in-the-wild'"},
		{[]string{"trace", "record", "smoke", "f.trace"}, "is now 'ratelab run NAME --record-trace FILE'"},
		{[]string{"trace", "replay", "f.trace", "--scenario", "smoke"}, "is now 'ratelab run NAME --trace FILE'"},
		{[]string{"scenarios", "lst"}, `unknown command "lst" for "ratelab scenarios"; did you mean list?`},
	} {
		code, stdout, stderr := execRatelab(t, dir, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("ratelab %s: exit %d, stderr %q; want 1 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("ratelab %s: printed %q on stdout; an error goes to stderr only", strings.Join(tc.args, " "), stdout)
		}
	}
}

// TestGroupsListTheirCommands: a group run bare prints its help, naming its commands and not
// the hidden old spellings, and exits 0.
func TestGroupsListTheirCommands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		group      string
		want, hide []string
	}{
		{"simulate", []string{"predict", "calibrate", "validate"}, nil},
		{"scenarios", []string{"list", "show"}, []string{"side-by-side", "in-the-wild"}},
		{"trace", []string{"gen", "import", "info"}, []string{"record ", "replay "}},
	} {
		code, stdout, stderr := execRatelab(t, t.TempDir(), tc.group)
		if code != 0 {
			t.Errorf("ratelab %s: exit %d, stderr %q", tc.group, code, stderr)
		}
		avail := stdout[strings.Index(stdout, "Available Commands:"):]
		for _, w := range tc.want {
			if !strings.Contains(avail, "  "+w+" ") {
				t.Errorf("ratelab %s: its help does not list %s:\n%s", tc.group, w, stdout)
			}
		}
		for _, h := range tc.hide {
			if strings.Contains(avail, "  "+h) {
				t.Errorf("ratelab %s: its help lists the old spelling %s:\n%s", tc.group, h, stdout)
			}
		}
	}
}

// TestOutputFlag: -o json leaves only the JSON document on stdout, and an unknown format is
// refused naming the flag, the value and the formats the command has.
func TestOutputFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"version", "-o", "json"},
		{"capacity", "plan", "--target-rps", "100000", "--tenants", "1000", "-o", "json"},
	} {
		code, stdout, stderr := execRatelab(t, dir, args...)
		var v map[string]any
		if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil {
			t.Errorf("%v: exit %d, stdout is not one JSON document (%v):\n%s\nstderr %s", args, code, err, stdout, stderr)
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
