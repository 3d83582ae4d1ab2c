//go:build faults

package gate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/cluster/clustertest"
	"ratelab/results/compare"
)

// TestMakePerfCheck runs the gate as CI does, `make perf-check`, in a clone of this commit with
// the base at HEAD (the same code, built twice): it must pass. Then again with 100 µs injected
// each way into every primary's traffic during the head's runs (the latency fault, no change
// to the build): it must fail with ratelab's exit 3, which make reports as "Error 3", and name
// p50_ms. Each gate is the default one: 8 runs per side, about 2 minutes of runs.
func TestMakePerfCheck(t *testing.T) {
	clustertest.Watch(t)
	ctx := context.Background()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	head, err := git(ctx, repo, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "ratelab")
	if _, err := git(ctx, repo, "clone", "--quiet", "--shared", "--no-checkout", repo, clone); err != nil {
		t.Fatal(err)
	}
	if _, err := git(ctx, clone, "checkout", "--quiet", "--detach", head); err != nil {
		t.Fatal(err)
	}
	makeGate := func(out string, flags string) (string, error) {
		cmd := exec.Command("make", "-C", clone, "perf-check", "PERF_BASE=HEAD", "PERF_OUT="+out, "PERF_CHECK_FLAGS="+flags)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		return buf.String(), err
	}
	same := filepath.Join(t.TempDir(), "same")
	if log, err := makeGate(same, ""); err != nil {
		t.Fatalf("make perf-check with the base at HEAD: %v\n%s", err, log)
	}
	if report := readReport(t, same); report.Regressed() {
		t.Errorf("the same code built twice regressed in %v", report.Regressions())
	}
	slow := filepath.Join(t.TempDir(), "slow")
	log, err := makeGate(slow, "--head-delay=100us")
	if err == nil || !strings.Contains(log, "Error 3") {
		t.Fatalf("make perf-check with 100 µs injected into the head's runs: %v, want make's Error 3 (ratelab's exit 3)\n%s", err, log)
	}
	if !strings.Contains(log, "perf-check: regression in") || !strings.Contains(log, "p50_ms") {
		t.Errorf("the failing gate's output does not name p50_ms as a regression:\n%s", log)
	}
	if md, err := os.ReadFile(filepath.Join(slow, CompareFile)); err != nil || !strings.Contains(string(md), "**REGRESSION**") {
		t.Errorf("%s: %v; want the regression in bold\n%s", CompareFile, err, md)
	}
}

// readReport judges the runs a gate left in out again, as the builds gate does.
func readReport(t *testing.T, out string) *compare.Report {
	t.Helper()
	base, err := compare.Load(filepath.Join(out, SideBase))
	if err != nil {
		t.Fatal(err)
	}
	head, err := compare.Load(filepath.Join(out, SideHead))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(Builds, base, head, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
