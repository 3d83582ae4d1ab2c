package faults_test

import (
	"context"
	"strings"
	"testing"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// externalSpec is a light scenario against the external cluster at addr with faults.
func externalSpec(t *testing.T, addr, faults string) *scenarios.Spec {
	t.Helper()
	spec, err := scenarios.Parse("external-faults", []byte(`
name: external-faults
duration: 6s
load: {rate: 400, concurrency: 8, max_inflight: 1024}
tenants: {count: 200}
endpoints: [{name: read, weight: 1}]
policy: {rate: 20, burst: 40}
cluster: {provider: external, url: "redis://`+addr+`"}
faults:
`+faults))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// connect reaches the cluster at addrs as an external one, closed when the test ends.
func connect(t *testing.T, addrs []string) *cluster.External {
	t.Helper()
	ext, err := cluster.ConnectExternal(t.Context(), cluster.ExternalConfig{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ext.Close() })
	return ext
}

func shardsOf(t *testing.T, cl cluster.Cluster) []cluster.Shard {
	t.Helper()
	shards, err := cl.Shards(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return shards
}

// runExternal runs spec through the engine's entry point with --allow-faults and checks that
// every fault was carried out.
func runExternal(t *testing.T, spec *scenarios.Spec) *results.Summary {
	t.Helper()
	res, err := engine.Run(context.Background(), spec, engine.Options{Out: t.TempDir(), AllowFaults: true, Logf: t.Logf})
	if res == nil {
		t.Fatalf("engine.Run: %v", err)
	}
	if err != nil {
		t.Errorf("engine.Run: %v", err)
	}
	sum := res.Summary
	if len(sum.Faults) != len(spec.Faults) {
		t.Fatalf("faults %+v, want the %d scheduled", sum.Faults, len(spec.Faults))
	}
	for _, f := range sum.Faults {
		if f.Failed || f.Error != "" {
			t.Errorf("fault %s on %s failed: %s", f.Kind, f.Target, f.Error)
		}
	}
	return sum
}

// An external cluster with replicas, formed by redis-cli as a user forms one: node:N of a
// reshard names the N-th primary in slot order (never a replica, whatever order CLUSTER NODES
// lists the nodes in), the failover promotes the replica of node:2's shard, and both faults are
// recorded as carried out.
func TestExternalClusterWithReplicas(t *testing.T) {
	t.Parallel()
	addrs := clustertest.StartRedisCLI(t, 3, 1)
	ext := connect(t, addrs)
	before := shardsOf(t, ext)
	spec := externalSpec(t, addrs[0], `
  - {at: 1s, kind: reshard, slots: 20, from: "node:0", to: "node:1"}
  - {at: 3s, kind: failover, target: "node:2"}
`)
	sum := runExternal(t, spec)
	if f := sum.Faults[0]; !strings.Contains(f.Target, "from node:0 = "+before[0].Primary.Addr) || !strings.Contains(f.Target, "to node:1 = "+before[1].Primary.Addr) {
		t.Errorf("reshard target %q: want from %s (shard 0) to %s (shard 1)", f.Target, before[0].Primary.Addr, before[1].Primary.Addr)
	}
	if f := sum.Faults[1]; !strings.Contains(f.Target, "node:2 = "+before[2].Primary.Addr) {
		t.Errorf("failover target %q: want shard 2's primary %s", f.Target, before[2].Primary.Addr)
	}
	after := shardsOf(t, ext)
	if have, want := after[0].SlotCount(), before[0].SlotCount()-20; have != want {
		t.Errorf("shard 0 serves %d slots after the reshard, want %d", have, want)
	}
	if have, want := after[1].SlotCount(), before[1].SlotCount()+20; have != want {
		t.Errorf("shard 1 serves %d slots after the reshard, want %d", have, want)
	}
	if have, want := after[2].Primary.Addr, before[2].Replicas[0].Addr; have != want {
		t.Errorf("shard 2's primary after the failover is %s, want its replica %s", have, want)
	}
}

// The same reshard on an external cluster without replicas (ratelab's formation, presented as
// external).
func TestExternalClusterWithoutReplicas(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 3, Replicas: 0})
	ext := connect(t, l.Addrs())
	before := shardsOf(t, ext)
	spec := externalSpec(t, l.Addrs()[2], `  - {at: 1s, kind: reshard, slots: 20, from: "node:2", to: "node:0"}
`)
	runExternal(t, spec)
	after := shardsOf(t, ext)
	if have, want := after[2].SlotCount(), before[2].SlotCount()-20; have != want {
		t.Errorf("shard 2 serves %d slots after the reshard, want %d", have, want)
	}
	if have, want := after[0].SlotCount(), before[0].SlotCount()+20; have != want {
		t.Errorf("shard 0 serves %d slots after the reshard, want %d", have, want)
	}
	for i, sh := range after {
		if sh.Primary.Addr != l.Addrs()[i] {
			t.Errorf("shard %d's primary %s, want node %d as started %s", i, sh.Primary.Addr, i, l.Addrs()[i])
		}
	}
}
