package scenarios

import (
	"testing"
	"time"
)

func TestDurabilityDefaultsAndNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		extra, name string
		replicas    int
		timeout     time.Duration
	}{
		{"", "async", 0, 0},
		{"limiter: {durability: wait}\n", "wait", DefaultDurabilityReplicas, DefaultDurabilityTimeout},
		{"limiter: {durability: wait-pipeline, transport: coalesce, durability_timeout: 5ms}\n", "wait-pipeline", 1, 5 * time.Millisecond},
		{"cluster: {min_replicas_to_write: 1}\n", "min-replicas", 0, 0},
	} {
		s, err := Parse("x.yaml", []byte(validYAML+tt.extra))
		if err != nil {
			t.Errorf("%q: %v", tt.extra, err)
			continue
		}
		if got := s.DurabilityName(); got != tt.name {
			t.Errorf("%q: DurabilityName = %q, want %q", tt.extra, got, tt.name)
		}
		if s.Limiter.DurabilityReplicas != tt.replicas || time.Duration(s.Limiter.DurabilityTimeout) != tt.timeout {
			t.Errorf("%q: WAIT %d %s, want %d %s", tt.extra, s.Limiter.DurabilityReplicas, time.Duration(s.Limiter.DurabilityTimeout), tt.replicas, tt.timeout)
		}
		if tt.name == "min-replicas" && time.Duration(s.Cluster.MinReplicasMaxLag) != DefaultMinReplicasMaxLag {
			t.Errorf("min_replicas_max_lag = %s, want the default %s", time.Duration(s.Cluster.MinReplicasMaxLag), DefaultMinReplicasMaxLag)
		}
	}
}

func TestPartitionTargets(t *testing.T) {
	t.Parallel()
	s, err := Parse("x.yaml", []byte(validYAML+"limiter: {kind: lease, lease: {gateways: 4, size: 5}}\nfaults: [{at: 0s, kind: partition, for: 1s}, {at: 0s, kind: partition, for: 2s, target: gateways:2}, {at: 1s, kind: partition, for: 1s, target: node:2}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f := s.Faults; !f[0].OnCluster() || !f[1].OnGateways() || f[1].OnCluster() || !f[2].OnCluster() || f[0].OnRegion() {
		t.Errorf("sides: %v %v %v", f[0].OnCluster(), f[1].OnGateways(), f[2].OnCluster())
	}
}
