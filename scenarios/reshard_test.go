package scenarios

import (
	"strings"
	"testing"
)

// A reshard's from/to name primaries as node:N, checked against cluster.primaries (which every
// validated spec has, an external cluster's included): a bad one is refused with their range.
func TestReshardNamesThePrimaries(t *testing.T) {
	t.Parallel()
	const base = "name: t\nduration: 2s\nload: {rate: 100}\ntenants: {count: 10}\npolicy: {rate: 10, burst: 20}\n"
	const reshard = "faults: [{at: 1s, kind: reshard, slots: 10, from: node:x, to: node:1}]\n"
	for _, tc := range []struct{ name, cluster, want string }{
		{"local 3x1", "cluster: {primaries: 3, replicas: 1}\n", "name a primary as node:N (0..2)"},
		{"node:3 of 3 primaries", "cluster: {primaries: 3, replicas: 1}\nfaults: [{at: 1s, kind: reshard, slots: 10, from: node:3, to: node:1}]\n", "(0..2)"},
		{"external", "cluster: {provider: external, url: 'redis://127.0.0.1:7000', primaries: 2}\n", "name a primary as node:N (0..1)"},
	} {
		spec := base + tc.cluster
		if !strings.Contains(tc.cluster, "faults:") {
			spec += reshard
		}
		_, err := Parse("x.yaml", []byte(spec))
		if err == nil || !strings.Contains(err.Error(), "faults[0].from") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: reshard from node:x: %v, want faults[0].from refused with %q", tc.name, err, tc.want)
		}
	}
}
