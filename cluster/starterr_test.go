package cluster_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"ratelab/cluster"
)

func TestStartLocalRedisNotFound(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"/nonexistent/redis-server", "ratelab-no-such-redis-server"} {
		dir := t.TempDir()
		_, err := cluster.StartLocal(context.Background(), cluster.Options{RedisServer: bin, Dir: dir})
		if !errors.Is(err, cluster.ErrRedisNotFound) {
			t.Errorf("RedisServer %q: err = %v, want ErrRedisNotFound", bin, err)
			continue
		}
		for _, want := range []string{"make redis", bin} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("RedisServer %q: err = %q, want it to mention %q", bin, err, want)
			}
		}
		assertEmptyDir(t, dir)
	}
}

// TestStartLocalPortBusy occupies a node's client port or its bus port (+10000) and expects an
// error naming that port.
func TestStartLocalPortBusy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		offset int // which port to occupy, relative to BasePort
		want   string
	}{
		{"client port of the second node", 1, "port"},
		{"bus port of the first node", 10000, "cluster bus port"},
	}
	for _, tt := range tests {
		base := cluster.FreeBasePort(t, 2)
		busy := base + tt.offset
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(busy))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		_, err = cluster.StartLocal(context.Background(), cluster.Options{Primaries: 2, Replicas: cluster.NoReplicas, BasePort: base, Dir: dir})
		_ = ln.Close()
		if !errors.Is(err, cluster.ErrPortBusy) {
			t.Errorf("%s: err = %v, want ErrPortBusy", tt.name, err)
			continue
		}
		for _, want := range []string{tt.want, strconv.Itoa(busy), "or 0 for free ports"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err = %q, want it to contain %q", tt.name, err, want)
			}
		}
		assertEmptyDir(t, dir)
	}
}

// TestStartLocalBadConfig: a node that cannot start reports its port and its log tail, and the
// failed start leaves no process and no dir.
func TestStartLocalBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := cluster.StartLocal(context.Background(), cluster.Options{
		Primaries: 1, Replicas: cluster.NoReplicas, Dir: dir,
		ExtraConfig: []string{"no-such-directive 42"},
	})
	if !errors.Is(err, cluster.ErrNodeStart) {
		t.Fatalf("err = %v, want ErrNodeStart", err)
	}
	for _, want := range []string{"127.0.0.1:", "exited during startup", "last lines of", "no-such-directive", "Bad directive"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q\nwant it to contain %q", err, want)
		}
	}
	assertEmptyDir(t, dir)
}

// TestStartLocalContextDeadline: a start that cannot finish in time stops what it started.
func TestStartLocalContextDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Dir: dir})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	assertEmptyDir(t, dir)
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("%s holds %d entries after a failed start, want none (first: %s)", dir, len(ents), ents[0].Name())
	}
}
