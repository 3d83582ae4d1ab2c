package engine

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/scenarios"
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
// MOVED, ASK and NOSCRIPT counts equal the nodes' own counts of those replies, within 2 — with
// each transport: plain calls, and the coalescing pipelines hot-tenant runs by default.
func TestRedirectCountsMatchTheNodes(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{scenarios.TransportPlain, scenarios.TransportCoalesce} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			redirectCountsMatch(t, transport)
		})
	}
}

func redirectCountsMatch(t *testing.T, transport string) {
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
limiter: {kind: token-bucket, timeout: 2s, transport: `+transport+`}
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

// TestCentralOpsAreDecisionCommands: central.ops counts the commands that make decisions — one
// EVALSHA per decision and one EVAL per NOSCRIPT retry, exactly — and not the warm-up PINGs,
// SCRIPT LOADs and slot-map reloads, which are other_ops. A run of 2 decisions makes 2.
func TestCentralOpsAreDecisionCommands(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: cluster.NoReplicas})
	state := filepath.Join(t.TempDir(), "state.json")
	if err := l.SaveState(state); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, extra string
		rate        float64
	}{
		{"two decisions", "", 1},
		{"a script flush", "faults: [{at: 1s, kind: script-flush, target: all}]\n", 1000},
	} {
		spec, err := scenarios.Parse("ops", []byte(`
name: ops
duration: 2s
load: {rate: 1000, concurrency: 8, max_inflight: 512}
tenants: {count: 100}
policy: {rate: 50, burst: 100}
limiter: {kind: token-bucket, timeout: 2s}
cluster: {provider: running, primaries: 2, replicas: 0}
`+tc.extra))
		if err != nil {
			t.Fatal(err)
		}
		spec.Load.Rate = tc.rate
		res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if want := s.Load.Completed + s.Errors.NoScript; s.Central.Ops != want || s.Central.OtherOps == 0 {
			t.Errorf("%s: central ops %d, other %d; want decisions %d + NOSCRIPT retries %d = %d, and the set-up commands apart",
				tc.name, s.Central.Ops, s.Central.OtherOps, s.Load.Completed, s.Errors.NoScript, want)
		}
		if tc.extra != "" && s.Errors.NoScript == 0 {
			t.Errorf("%s: no NOSCRIPT after a script flush", tc.name)
		}
	}
}
