package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The plan prints its reasoning and a recommendation; the numbers are re-derived in
// scenarios/capacity's tests, here the command's wiring is checked.
func TestCapacityPlanCommand(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary, "capacity", "plan", "--target-rps", "5000000", "--tenants", "1000000",
		"--zipf", "0.99", "--headroom", "0.3", "--lease", "100").CombinedOutput()
	if err != nil {
		t.Fatalf("capacity plan: %v\n%s", err, out)
	}
	for _, want := range []string{"1. One primary runs the limiter script at 80,000 calls/s", "Limiting factor: hottest key",
		"leases of 100: 30 primaries", "Recommendation for 5000000 decisions/s"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(binary, "capacity", "plan", "--target-rps", "1000", "--per-shard-rps", "10", "--from", "x.json").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--from and --per-shard-rps") {
		t.Errorf("both rate sources accepted: %v\n%s", err, out)
	}
}

func TestSimulateCommand(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary, "simulate", "--shards", "4", "--rate", "200000", "--tenants", "10000",
		"--service-us", "5", "--failover", "--fail", "open", "--json").Output()
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, out)
	}
	var res struct {
		ThroughputRPS float64 `json:"throughput_rps"`
		Shards        []struct {
			Utilisation float64 `json:"utilisation"`
		} `json:"shards"`
		Failover *struct {
			OutageS              float64 `json:"outage_s"`
			OverspendBoundTokens float64 `json:"overspend_bound_tokens"`
		} `json:"failover"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("simulate --json: %v\n%s", err, out)
	}
	if len(res.Shards) != 4 || res.ThroughputRPS < 180_000 || res.ThroughputRPS > 220_000 {
		t.Errorf("shards %d throughput %.0f: want 4 shards near 200,000/s", len(res.Shards), res.ThroughputRPS)
	}
	if res.Failover == nil || res.Failover.OutageS != 2.3 || res.Failover.OverspendBoundTokens <= 0 {
		t.Errorf("failover %+v: want a 2.3 s outage (1s + 1.3s) with a positive overspend bound", res.Failover)
	}
}
