//go:build faults

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ratelab/cluster/clustertest"
	"ratelab/results"
)

// TestDemoQuick runs `ratelab demo --quick` end to end on real local clusters: every step leaves
// a summary.json per run with decisions in it, and index.html links only files that exist. It
// is in the fault tier: nine runs on eleven clusters, two steps with faults.
func TestDemoQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eleven local Redis Clusters")
	}
	clustertest.Watch(t)
	out := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "demo", "--quick", "-q", "--out", out)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ratelab demo --quick: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "5 of 5 steps") {
		t.Errorf("demo did not report 5 finished steps:\n%s", got)
	}
	runs, err := filepath.Glob(filepath.Join(out, "*", results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 9 {
		t.Fatalf("%d summaries under %s, want 9 (one per run of the 5 steps)", len(runs), out)
	}
	for _, p := range runs {
		s, err := results.ReadSummary(p)
		if err != nil {
			t.Fatal(err)
		}
		clustertest.RecordLag(t, s.Load.ScheduleLagP99Ms)
		if s.Load.Completed == 0 {
			t.Errorf("%s: no decisions", p)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`(?:href|src)="([^"]+)"`).FindAllStringSubmatch(string(page), -1)
	var svgs int
	for _, l := range links {
		u := l[1]
		if strings.Contains(u, "://") || strings.HasPrefix(u, "/") {
			t.Errorf("index link %q is not relative", u)
			continue
		}
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(u))); err != nil {
			t.Errorf("index link %q does not resolve: %v", u, err)
		}
		if strings.HasSuffix(u, ".svg") {
			svgs++
		}
	}
	if svgs < 9 {
		t.Errorf("index shows %d SVG plot links, want at least one per run (9)", svgs)
	}
}
