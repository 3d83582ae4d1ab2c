package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/studies/bench"
)

// TestBenchQuick runs `ratelab bench --quick` as a user would: one local cluster, all six
// sections briefly. README.md must hold a row for each section with a positive rate, a verdict
// beside every target, the ratio line and the reproducing command; raw.json the same numbers.
// Whether a target is met is only in the README text: a loaded CI machine measures what it
// measures, so the test checks that every section measured something, not how much.
func TestBenchQuick(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Fatalf("redis-benchmark is not on PATH (install redis-tools: make redis): %v", err)
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Fatalf("wrk is not on PATH (apt-get install wrk): %v", err)
	}
	out := t.TempDir()
	start := time.Now()
	cmd := exec.Command(binary, "bench", "--quick", "-q", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ratelab bench --quick: %v\n%s", err, b)
	}
	t.Logf("ratelab bench --quick took %v", time.Since(start))
	readme, err := os.ReadFile(filepath.Join(out, bench.ReadmeFile))
	if err != nil {
		t.Fatal(err)
	}
	md := string(readme)
	for _, want := range []string{"`ratelab bench --quick -q --out " + out + "`", "**ratio**", "Redis 7", "cores"} {
		if !strings.Contains(md, want) {
			t.Errorf("README.md lacks %q:\n%s", want, md)
		}
	}
	rows := map[string]int{}
	for _, line := range strings.Split(md, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 8 {
			continue
		}
		section := strings.TrimSpace(cells[1])
		for _, s := range []string{bench.SectionGenerator, bench.SectionMemory, bench.SectionCentral, bench.SectionCeiling, bench.SectionLease, bench.SectionGateway} {
			if section != s {
				continue
			}
			rows[s]++
			if target := strings.TrimSpace(cells[7]); target != "" && !strings.HasSuffix(target, "**met**") && !strings.HasSuffix(target, "**not met**") {
				t.Errorf("section %s: target cell %q says neither met nor not met", s, target)
			}
			rate := strings.ReplaceAll(strings.TrimSpace(cells[3]), ",", "")
			if rate == "" || rate == "0" || strings.HasPrefix(rate, "-") {
				t.Errorf("section %s: decisions/s cell %q, want a positive number: %s", s, cells[3], line)
			}
		}
	}
	want := map[string]int{bench.SectionGenerator: 1, bench.SectionMemory: 1, bench.SectionCentral: 4, bench.SectionCeiling: 1, bench.SectionLease: 1, bench.SectionGateway: 3}
	for s, n := range want {
		if rows[s] != n {
			t.Errorf("README.md has %d rows of section %q, want %d:\n%s", rows[s], s, n, md)
		}
	}

	raw, err := os.ReadFile(filepath.Join(out, bench.RawFile))
	if err != nil {
		t.Fatal(err)
	}
	var report bench.Report
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatalf("raw.json: %v", err)
	}
	if len(report.Repetitions) != 1 || len(report.Goals) != 6 {
		t.Fatalf("raw.json: %d runs and %d goals, want 1 and 6", len(report.Repetitions), len(report.Goals))
	}
	rep := report.Repetitions[0]
	positive := map[string]float64{
		"generator decisions/s": rep.Generator.DecisionsPerSec,
		"memory decisions/s":    rep.Memory.DecisionsPerSec,
		"ceiling requests/s":    rep.Ceiling.RequestsPerSec,
		"ratio":                 rep.Ratio.Value,
		"lease achieved/s":      rep.Lease.AchievedRPS,
		"lease p99":             float64(rep.Lease.P99Ms),
		"ceiling Redis busy":    rep.Ceiling.RedisBusy,
		"ceiling Redis µs/call": rep.Ceiling.RedisUsPerCall,
		"open loop achieved/s":  rep.OpenLoop.AchievedRPS,
		"open loop calls/read":  rep.OpenLoop.CallsPerRead,
	}
	if c := rep.OpenLoop.CPU; c == nil || !(c.Generator > 0 && c.Primaries > 0 && c.Replicas > 0 && c.Total > 0) {
		t.Errorf("raw.json open_loop CPU per decision %+v, want every part > 0", c)
	}
	for _, v := range rep.Gateway.Variants {
		positive[v.Name+" requests/s"] = v.RequestsPerSec
		positive[v.Name+" p99"] = v.P99Ms
	}
	positive["gateway in-memory / bare"] = rep.Gateway.MemoryRatio
	positive["gateway redis / bare"] = rep.Gateway.RedisRatio
	for _, c := range rep.Central {
		positive[c.Mode+" decisions/s"] = c.DecisionsPerSec
		positive[c.Mode+" p99"] = c.P99Ms
		positive[c.Mode+" Redis busy"] = c.RedisBusy
		positive[c.Mode+" Redis µs/call"] = c.RedisUsPerCall
	}
	for name, v := range positive {
		if !(v > 0) {
			t.Errorf("raw.json %s = %v, want > 0", name, v)
		}
	}
	if report.Schema != bench.SchemaReport || len(rep.Central) != 3 || len(rep.Gateway.Variants) != 3 || rep.Memory.AllocsPerDecision < 0 {
		t.Errorf("raw.json: schema %q, %d central and %d gateway variants, allocs %v; want %q, 3, 3, >= 0",
			report.Schema, len(rep.Central), len(rep.Gateway.Variants), rep.Memory.AllocsPerDecision, bench.SchemaReport)
	}
}
