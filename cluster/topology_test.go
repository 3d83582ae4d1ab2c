package cluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// TestTopologies starts small primaries-only clusters and checks roles, slot ranges and state.
func TestTopologies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      cluster.Options
		wantSlots [][]cluster.SlotRange // per primary, in start order
	}{
		{"1x0", cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas}, [][]cluster.SlotRange{{{Start: 0, End: 16383}}}},
		{"2x0", cluster.Options{Primaries: 2, Replicas: 0}, [][]cluster.SlotRange{{{Start: 0, End: 8191}}, {{Start: 8192, End: 16383}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := clustertest.Start(t, tt.opts)
			st := l.Status(context.Background())
			if have, want := len(st.Nodes), len(tt.wantSlots); have != want {
				t.Fatalf("%d nodes, want %d", have, want)
			}
			if !st.Healthy() {
				t.Errorf("Status not healthy: %+v", st)
			}
			for i, n := range st.Nodes {
				if n.Role != cluster.RolePrimary || n.State != "ok" || !slices.Equal(n.Slots, tt.wantSlots[i]) {
					t.Errorf("node %d = role %s, state %s, slots %v; want primary, ok, %v", i, n.Role, n.State, n.Slots, tt.wantSlots[i])
				}
			}
			if have, want := len(l.Primaries()), len(tt.wantSlots); have != want {
				t.Errorf("len(Primaries()) = %d, want %d", have, want)
			}
			var b strings.Builder
			if err := st.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tt.wantSlots[len(tt.wantSlots)-1][0].String()) {
				t.Errorf("WriteText lacks the last slot range:\n%s", b.String())
			}
			cc := clustertest.Client(t, l)
			if err := cc.Set(t.Context(), "k", "v", 0).Err(); err != nil {
				t.Errorf("SET through a ClusterClient: %v", err)
			}
		})
	}
}
