package engine

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/cluster/clustertest"
)

// errorStats sums the nodes' own count of the error replies they sent (INFO errorstats) by
// prefix: MOVED, ASK, NOSCRIPT...
func errorStats(t *testing.T, l *cluster.Local) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, n := range l.Nodes() {
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		info, err := c.Info(context.Background(), "errorstats").Result()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":count=")
			if !ok || !strings.HasPrefix(name, "errorstat_") {
				continue
			}
			n, _ := strconv.ParseInt(rest, 10, 64)
			out[strings.TrimPrefix(name, "errorstat_")] += n
		}
	}
	return out
}

// TestRedirectCountsMatchTheNodes: in a run that is the only client of its cluster, with a
// reshard (ASK while slots move, MOVED after) and a script flush (NOSCRIPT), the summary's
// MOVED, ASK and NOSCRIPT counts equal the nodes' own counts of those replies, within 2.
func TestRedirectCountsMatchTheNodes(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 3, Replicas: cluster.NoReplicas})
	state := filepath.Join(t.TempDir(), "state.json")
	if err := l.SaveState(state); err != nil {
		t.Fatal(err)
	}
	before := errorStats(t, l)
	spec, err := scenarios.Parse("redirects", []byte(`
name: redirects
duration: 4s
load: {rate: 2000, concurrency: 16, max_inflight: 512}
tenants: {count: 300, theta: 0.99}
policy: {rate: 50, burst: 100}
limiter: {kind: token-bucket, timeout: 2s}
cluster: {provider: running, primaries: 3, replicas: 0}
faults:
  - {at: 1s, kind: reshard, slots: 20, from: "node:0", to: "node:1"}
  - {at: 2500ms, kind: script-flush, target: all}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // replies in flight at the end are counted by then
	after := errorStats(t, l)
	e := res.Summary.Errors
	for _, c := range []struct {
		name string
		have int64
	}{{"MOVED", e.Moved}, {"ASK", e.Ask}, {"NOSCRIPT", e.NoScript}} {
		want := after[c.name] - before[c.name]
		if want == 0 || c.have < want-2 || c.have > want+2 {
			t.Errorf("%s: summary %d, the nodes' INFO errorstats %d: want equal within 2 (and some)", c.name, c.have, want)
		}
	}
}
