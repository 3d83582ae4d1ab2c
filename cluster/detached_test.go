package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/cluster"
)

// TestDetachedRoundTrip: Up records a detached cluster; a second Up refuses; Attach finds it;
// closing the attached handle leaves it running; a dead node makes Attach fail and Status
// unhealthy; Down ends it and removes its dir and state; then nothing is recorded.
func TestDetachedRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	stateFile := filepath.Join(dir, "state.json")
	opts := cluster.Options{Primaries: 1, Replicas: 1, Dir: dir, Logf: t.Logf}
	up, err := cluster.Up(ctx, opts, stateFile)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { _ = up.Stop() })
	if !up.Detached() {
		t.Error("Up returned a cluster that is not Detached")
	}
	nodes := up.Nodes()
	if err := up.Close(); err != nil { // releases clients only
		t.Fatalf("Close of a detached cluster: %v", err)
	}
	for _, n := range nodes {
		if !cluster.ProcessAlive(n.Pid) {
			t.Fatalf("node %s pid %d died on Close of a detached cluster", n.Addr, n.Pid)
		}
	}

	if _, err := cluster.Up(ctx, opts, stateFile); !errors.Is(err, cluster.ErrAlreadyRunning) || !strings.Contains(err.Error(), "ratelab cluster down") {
		t.Errorf("second Up: err = %v, want ErrAlreadyRunning advising `ratelab cluster down`", err)
	}

	at, err := cluster.Attach(ctx, stateFile)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	have := at.Nodes()
	if len(have) != len(nodes) {
		t.Fatalf("attached Nodes() has %d nodes, want %d", len(have), len(nodes))
	}
	for i := range have {
		if have[i].ID != nodes[i].ID || have[i].Pid != nodes[i].Pid || have[i].Role != nodes[i].Role {
			t.Errorf("attached node %d = %+v, want %+v", i, have[i], nodes[i])
		}
	}
	if at.RedisVersion() != up.RedisVersion() {
		t.Errorf("attached RedisVersion() = %q, want %q", at.RedisVersion(), up.RedisVersion())
	}
	st, err := cluster.ReadStatus(ctx, stateFile)
	if err != nil || !st.Healthy() {
		t.Fatalf("ReadStatus = %+v, %v; want healthy", st, err)
	}

	// A node dies (killed through the attached handle, by pid): Attach refuses, status shows it down.
	replica := nodes[1]
	if err := at.Kill(replica.Addr); err != nil {
		t.Fatal(err)
	}
	if err := at.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Attach(ctx, stateFile); !errors.Is(err, cluster.ErrNotRunning) || !strings.Contains(err.Error(), replica.Addr) {
		t.Errorf("Attach with a dead node: err = %v, want ErrNotRunning naming %s", err, replica.Addr)
	}
	st, err = cluster.ReadStatus(ctx, stateFile)
	if err != nil || st.Healthy() || st.Nodes[1].State != "down" {
		t.Errorf("ReadStatus with a dead node = %+v, %v; want node 1 down and unhealthy", st, err)
	}

	if err := cluster.Down(stateFile); err != nil {
		t.Fatalf("Down: %v", err)
	}
	for _, n := range nodes {
		if cluster.ProcessAlive(n.Pid) {
			t.Errorf("node %s pid %d alive after Down", n.Addr, n.Pid)
		}
	}
	for _, p := range []string{stateFile, up.Dir()} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after Down (stat: %v)", p, err)
		}
	}
	if _, err := cluster.Attach(ctx, stateFile); !errors.Is(err, cluster.ErrNoState) {
		t.Errorf("Attach after Down: err = %v, want ErrNoState", err)
	}
	if err := cluster.Down(stateFile); !errors.Is(err, cluster.ErrNoState) {
		t.Errorf("second Down: err = %v, want ErrNoState", err)
	}
}

// TestUpReplacesStaleState: a state file whose nodes are all gone does not block Up.
func TestUpReplacesStaleState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stateFile := filepath.Join(dir, "state.json")
	stale := `{"schema":"ratelab.cluster-state/v1","dir":"` + filepath.Join(dir, "ratelab-cluster-gone") +
		`","nodes":[{"id":"x","addr":"127.0.0.1:1","port":1,"role":"primary","pid":2147483646,"dir":"/nonexistent"}]}`
	if err := os.WriteFile(stateFile, []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Attach(t.Context(), stateFile); !errors.Is(err, cluster.ErrNotRunning) {
		t.Errorf("Attach to a stale state: err = %v, want ErrNotRunning", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "garbage.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Up(context.Background(), cluster.Options{}, filepath.Join(dir, "garbage.json")); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("Up over a corrupt state file: err = %v, want advice to remove it", err)
	}
	l, err := cluster.Up(t.Context(), cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Dir: dir}, stateFile)
	if err != nil {
		t.Fatalf("Up over a stale state file: %v", err)
	}
	if err := l.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(stateFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file exists after Stop (stat: %v)", err)
	}
}

func TestDefaultStateFile(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1234")
	if have, want := cluster.DefaultStateFile(), "/run/user/1234/ratelab-cluster.json"; have != want {
		t.Errorf("DefaultStateFile() = %q, want %q", have, want)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	if have, want := cluster.DefaultStateFile(), filepath.Join(os.TempDir(), "ratelab-cluster.json"); have != want {
		t.Errorf("DefaultStateFile() = %q, want %q", have, want)
	}
}
