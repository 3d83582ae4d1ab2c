package bench

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"ratelab/cluster"
)

// TestMeasureGatewayQuick runs section 6 as a quick bench does, on a real local cluster and a
// real loopback server under wrk: every variant answers 200s at a positive rate, the ratios are
// the rates' quotients, the CPU per request is booked where it is spent, and a missing wrk is
// an error that says how to install it.
func TestMeasureGatewayQuick(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Fatalf("wrk is not on PATH (apt-get install wrk): %v", err)
	}
	ctx := context.Background()
	cl, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 3, Replicas: 0, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	opts := Options{Quick: true, GatewayConns: 8}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	g, err := measureGateway(ctx, opts, cl.Addrs(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Variants) != 3 || g.Conns != 8 || !strings.Contains(g.Command, "-c 8 ") || !strings.Contains(g.Command, "studies/bench/wrk.lua") {
		t.Fatalf("gateway section: %+v; want 3 variants at 8 connections and the wrk command", g)
	}
	for _, v := range g.Variants {
		if !(v.RequestsPerSec > 0) || !(v.P99Ms > 0) || v.Non2xx != 0 || v.Seconds < 1.5 {
			t.Errorf("%s: %+v; want a positive rate and p99, only 2xx answers, two 1 s halves", v.Name, v)
		}
	}
	if v := g.Variants; !(v[0].WrkCPUUs > 0 && v[0].ServerCPUUs > 0 && v[2].RedisCPUUs > v[0].RedisCPUUs) {
		t.Errorf("CPU per request: %+v; want wrk's and the server's > 0, and Redis's higher behind the Redis gateway than behind bare", v)
	}
	if got := g.Variants[1].RequestsPerSec / g.Variants[0].RequestsPerSec; got != g.MemoryRatio {
		t.Errorf("in-memory ratio %v, want %v", g.MemoryRatio, got)
	}
	if got := g.Variants[2].RequestsPerSec / g.Variants[0].RequestsPerSec; got != g.RedisRatio {
		t.Errorf("Redis ratio %v, want %v", g.RedisRatio, got)
	}

	opts.Wrk = "/nonexistent/wrk"
	if _, err := measureGateway(ctx, opts, cl.Addrs(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "apt-get install wrk") {
		t.Errorf("without wrk: %v, want an error saying how to install it", err)
	}
}
