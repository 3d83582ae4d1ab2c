package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The plan prints its reasoning and a recommendation; the numbers are re-derived in
// studies/capacity's tests, here the command's wiring is checked.
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
	out, err = exec.Command(binary, "capacity", "plan", "--target-rps", "1000", "--per-primary-rps", "10", "--from", "x.json").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--from and --per-primary-rps") {
		t.Errorf("both rate sources accepted: %v\n%s", err, out)
	}
}

// A host law the model does not have is refused by name, with the ones it has, before any
// Redis node starts.
func TestSimulateValidateBadLaw(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary, "simulate", "validate", "--host-law", "quadratic").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `--host-law: host load law "quadratic": want "floor", "erlang-c" or "proportional"`) {
		t.Errorf("--host-law quadratic: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "cluster: starting") {
		t.Errorf("a cluster started before the flag was checked:\n%s", out)
	}
}

func TestSimulateCommand(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary, "simulate", "predict", "--primaries", "4", "--rate", "200000", "--tenants", "10000",
		"--service-us", "5", "--failover", "--fail", "open", "-o", "json").Output()
	if err != nil {
		t.Fatalf("simulate predict: %v\n%s", err, out)
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
		t.Fatalf("simulate predict -o json: %v\n%s", err, out)
	}
	if len(res.Shards) != 4 || res.ThroughputRPS < 180_000 || res.ThroughputRPS > 220_000 {
		t.Errorf("shards %d throughput %.0f: want 4 shards near 200,000/s", len(res.Shards), res.ThroughputRPS)
	}
	if res.Failover == nil || res.Failover.OutageS != 2.3 || res.Failover.OverspendBoundTokens <= 0 {
		t.Errorf("failover %+v: want a 2.3 s outage (1s + 1.3s) with a positive overspend bound", res.Failover)
	}
}

// --colocated puts the shards on the calibrated machine's CPU: it needs a calibration with a
// host (a saturation probe), says so without one, and caps throughput at the host's capacity.
func TestSimulateColocated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.json")
	if err := os.WriteFile(plain, []byte(`{"service":{"kind":"constant","mean_us":20},"client":[{"p":0,"ms":0.3},{"p":1,"ms":0.3}],"client_cpu_us":40}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "simulate", "predict", "--primaries", "1", "--rate", "1000", "--tenants", "100", "--calibration", plain, "--colocated").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--probe-rate") {
		t.Errorf("--colocated without a host: err %v, output %s; want an error naming --probe-rate", err, out)
	}
	host := filepath.Join(dir, "host.json")
	if err := os.WriteFile(host, []byte(`{"service":{"kind":"constant","mean_us":20},"client":[{"p":0,"ms":0.3},{"p":1,"ms":0.3}],"client_cpu_us":40,
		"host":{"capacity_rps":4000,"off_fraction":0.2,"off_mean_ms":10,"off_sigma":0.5}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(binary, "simulate", "predict", "--primaries", "1", "--rate", "8000", "--tenants", "100", "--calibration", host,
		"--colocated", "--max-inflight", "512", "-o", "json").Output()
	if err != nil {
		t.Fatalf("simulate predict --colocated: %v\n%s", err, out)
	}
	var res struct {
		ThroughputRPS   float64 `json:"throughput_rps"`
		HostUtilisation float64 `json:"host_utilisation"`
		GatewayCores    float64 `json:"gateway_cores"`
		Dropped         int64   `json:"dropped"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("simulate predict -o json: %v\n%s", err, out)
	}
	if res.HostUtilisation != 2 || res.ThroughputRPS > 4400 || res.Dropped == 0 || res.GatewayCores != 8000*40e-6 {
		t.Errorf("8000/s on a host of 4000/s: %+v; want utilisation 2, ~4000/s, drops, 0.32 gateway cores", res)
	}
}
