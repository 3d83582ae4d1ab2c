package cluster_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// ReadNodeStats counts exactly the script calls made between two readings of a real node, and
// an address nothing listens on is an error that names it.
func TestReadNodeStats(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
	addr := l.Primaries()[0].Addr
	ctx := t.Context()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	script := redis.NewScript(`return redis.call('INCR', KEYS[1])`)
	if err := script.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	before, err := cluster.ReadNodeStats(ctx, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	const evalsha, eval = 30, 20
	for range evalsha {
		if err := script.EvalSha(ctx, c, []string{"n"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range eval {
		if err := script.Eval(ctx, c, []string{"n"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := cluster.ReadNodeStats(ctx, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Calls - before.Calls; d != evalsha+eval {
		t.Errorf("script calls between the readings: %d, want %d", d, evalsha+eval)
	}
	if after.Usec <= before.Usec || after.CPUSeconds < before.CPUSeconds || after.TotalCPUSeconds < after.CPUSeconds {
		t.Errorf("before %+v, after %+v: want the scripts' time to grow, and the process's CPU at least the main thread's", before, after)
	}
	if after.P50Us <= 0 || after.P99Us < after.P50Us {
		t.Errorf("EVALSHA percentiles p50 %v µs p99 %v µs: want 0 < p50 <= p99 (INFO latencystats)", after.P50Us, after.P99Us)
	}
	if _, err := cluster.ReadNodeStats(ctx, []string{"127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("INFO on 127.0.0.1:1: err %v, want an error naming the address", err)
	}
}
