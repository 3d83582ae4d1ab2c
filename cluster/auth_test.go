package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// TestRequirePass: a 2x0 cluster with a generated password refuses clients without it, serves
// ClientOptions, moves a slot with its key (MIGRATE carries AUTH), and a killed node restarts
// (the readiness PING authenticates).
func TestRequirePass(t *testing.T) {
	t.Parallel()
	logs := syncBuffer{t: t}
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: cluster.NoReplicas, RequirePass: true, Logf: logs.logf})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pw := l.Password()
	if len(pw) != 64 {
		t.Fatalf("password has %d characters, want 64 hex", len(pw))
	}
	if b, err := os.ReadFile(l.PasswordFile()); err != nil || strings.TrimSpace(string(b)) != pw {
		t.Fatalf("password file %s: %v; want the password", l.PasswordFile(), err)
	}
	anon := redis.NewClusterClient(&redis.ClusterOptions{Addrs: l.Addrs(), MaxRetries: -1})
	if err := anon.Set(ctx, "k", 1, 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("SET without password: %v, want NOAUTH", err)
	}
	_ = anon.Close()
	c := redis.NewClusterClient(l.ClientOptions())
	defer c.Close()
	const key = "rl:{tenant-1}:read"
	if err := c.Set(ctx, key, "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	slot := cluster.KeySlot(key)
	from, err := l.PrimaryFor(slot)
	if err != nil {
		t.Fatal(err)
	}
	var to cluster.Node
	for _, p := range l.Primaries() {
		if p.Addr != from.Addr {
			to = p
		}
	}
	res, err := l.MigrateSlots(ctx, 0, from.Addr, to.Addr, cluster.WithSlotRange(cluster.SlotRange{Start: slot, End: slot}))
	if err != nil {
		t.Fatalf("MigrateSlots with requirepass: %v", err)
	}
	if res.Keys != 1 {
		t.Errorf("MigrateSlots moved %d keys, want 1", res.Keys)
	}
	if now, err := l.PrimaryFor(slot); err != nil || now.Addr != to.Addr {
		t.Errorf("slot %d served by %v (%v) after the move, want %s", slot, now.Addr, err, to.Addr)
	}
	if v, err := c.Get(ctx, key).Result(); err != nil || v != "v" {
		t.Errorf("GET after the move: %q, %v", v, err)
	}
	if err := l.Kill(to.Addr); err != nil {
		t.Fatal(err)
	}
	if err := l.Restart(ctx, to.Addr); err != nil {
		t.Fatalf("Restart with requirepass: %v", err)
	}
	if err := l.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), pw) {
		t.Error("the password appears in the progress log")
	}
}

// TestUpRequirePass: a detached cluster records its password file, never the password, and
// Attach from the state file authenticates with it.
func TestUpRequirePass(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	stateFile := filepath.Join(dir, "state.json")
	up, err := cluster.Up(ctx, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Dir: dir, RequirePass: true, Logf: t.Logf}, stateFile)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { _ = up.Stop() })
	pw := up.Password()
	b, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), pw) || !strings.Contains(string(b), "password_file") {
		t.Errorf("state file holds the password or lacks password_file:\n%s", b)
	}
	a, err := cluster.Attach(ctx, stateFile)
	if err != nil {
		t.Fatalf("Attach to a requirepass cluster: %v", err)
	}
	defer a.Close()
	if a.Password() != pw {
		t.Error("Attach did not read the password file")
	}
	if err := a.WaitHealthy(ctx); err != nil {
		t.Fatalf("WaitHealthy through the attached handle: %v", err)
	}
	if err := cluster.Down(stateFile); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stateFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after Down: %v", err)
	}
}

func TestTLSOptionsValidate(t *testing.T) {
	t.Parallel()
	err := cluster.Options{TLS: &cluster.TLSFiles{CertFile: "c.pem"}, Proxy: true}.Validate()
	for _, want := range []string{"TLS set with Proxy", "need CertFile, KeyFile and CAFile"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}
