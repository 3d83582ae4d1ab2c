package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

func TestParseExternal(t *testing.T) {
	t.Parallel()
	c, err := cluster.ParseExternal("redis://app@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002")
	if err != nil {
		t.Fatal(err)
	}
	if have, want := strings.Join(c.Addrs, " "), "10.0.0.1:7000 10.0.0.2:7001 [::1]:7002"; have != want || c.User != "app" || c.TLS != nil {
		t.Errorf("have addrs %q user %q tls %v, want %q user app, no TLS", have, c.User, c.TLS, want)
	}
	if c, err = cluster.ParseExternal("rediss://h:6379"); err != nil || c.TLS == nil || c.User != "" {
		t.Errorf("rediss: have %+v, %v; want TLS on, default user", c, err)
	}
	bad := []struct{ spec, want string }{
		{"redis://app:s3cret-pw@h:1", "$RATELAB_REDIS_PASSWORD or pass --password-file"},
		{"redis://:s3cret-pw@h:1", "the URL holds a password"},
		{"http://h:1", "want redis://"},
		{"redis://h", "missing port"},
		{"redis://h:0", "want 1..65535"},
		{"redis://h:1/0", "no database"},
		{"redis://@h:1", "empty user"},
		{"redis://h:1,:2", "empty host"},
	}
	for _, b := range bad {
		_, err := cluster.ParseExternal(b.spec)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParseExternal(%q) = %v, want an error containing %q", b.spec, err, b.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("ParseExternal(%q) error prints the password: %v", b.spec, err)
		}
	}
}

func TestExternalConfigNeverPrintsPassword(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-very-secret"
	c := cluster.ExternalConfig{Addrs: []string{"h:1"}, User: "app", Password: pw, TLS: &cluster.TLSFiles{CAFile: "/ca.pem"}}
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprintf("%+v", &c), string(j),
		c.Redact("AUTH app " + pw + " failed"), cluster.RedactURL("dial redis://app:" + pw + "@h:1 failed")} {
		if strings.Contains(s, pw) {
			t.Errorf("password printed: %s", s)
		}
	}
	if have := fmt.Sprint(c); !strings.Contains(have, "rediss://app@h:1") || !strings.Contains(have, "redacted") {
		t.Errorf("String() = %q, want the URL without password and a note that one is set", have)
	}
	if have, want := cluster.RedactURL(`x "redis://u:p@h:1" y redis://h:2`), `x "redis://u:***@h:1" y redis://h:2`; have != want {
		t.Errorf("RedactURL = %q, want %q", have, want)
	}
}

func TestKeyPrefix(t *testing.T) {
	t.Parallel()
	p, err := cluster.KeyPrefix("run-20261202.1")
	if err != nil || p != "ratelab:run-20261202.1:" {
		t.Fatalf("KeyPrefix = %q, %v", p, err)
	}
	if have, want := cluster.KeySlot(p+"rl:{tenant-7}:read"), cluster.KeySlot("rl:{tenant-7}:read"); have != want {
		t.Errorf("prefix moved the key from slot %d to %d", want, have)
	}
	for _, id := range []string{"", "a{b}", "a*", "a b", strings.Repeat("x", 65)} {
		if _, err := cluster.KeyPrefix(id); err == nil {
			t.Errorf("KeyPrefix(%q) accepted", id)
		}
	}
}

// syncBuffer collects log lines from concurrent goroutines.
type syncBuffer struct {
	t  *testing.T // also logs there when set
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) logf(format string, args ...any) {
	if s.t != nil {
		s.t.Logf(format, args...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(&s.b, format+"\n", args...)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExternalTLSACL starts a 2x1 cluster that speaks TLS only (client port, bus, replication)
// with a generated requirepass and an ACL user, then treats it as an external cluster: connect
// with the user's password from the environment and a private CA, check, write keys under a
// run's prefix and clean them up, leaving every other key.
func TestExternalTLSACL(t *testing.T) {
	certs := testCerts(t)
	logs := syncBuffer{t: t}
	// NodeTimeout 5 s: it is also how long a node keeps a MEET in handshake, and a TLS
	// handshake on the bus of a loaded machine can outlast the default, after which the MEET is
	// silently dropped and the node never joins.
	l := clustertest.Start(t, cluster.Options{
		Primaries: 2, Replicas: 1, RequirePass: true, TLS: certs, NodeTimeout: 5 * time.Second, Logf: logs.logf,
	})
	t.Cleanup(func() { // runs before the cluster's Close: its logs still exist
		if t.Failed() {
			dumpLogs(t, l)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	pw := l.Password()
	if len(pw) < 32 {
		t.Fatalf("RequirePass password %q is too short", pw)
	}
	if fi, err := os.Stat(l.PasswordFile()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file %s: %v, mode %v; want 0600", l.PasswordFile(), err, fi.Mode())
	}
	if strings.Contains(logs.String(), pw) {
		t.Fatalf("the generated password appears in the progress log")
	}
	// Without the password (TLS and CA right) every node refuses.
	noPass := l.ClientOptions()
	noPass.Password = ""
	c0 := redis.NewClient(&redis.Options{Addr: l.Addrs()[0], TLSConfig: noPass.TLSConfig, MaxRetries: -1})
	if err := c0.Set(ctx, "x", 1, 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("SET without password: %v, want NOAUTH", err)
	}
	_ = c0.Close()
	// Without TLS the port does not speak Redis.
	plain := redis.NewClient(&redis.Options{Addr: l.Addrs()[0], Password: pw, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Errorf("plain-TCP PING on a TLS-only node succeeded")
	}
	_ = plain.Close()

	const user, userPw = "ratelab-run", "user-pw-0123456789abcdef"
	if err := l.ACLSetUser(ctx, user, "on", ">"+userPw, "~*", "+@all"); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cluster.PasswordEnv, userPw)
	cfg, err := cluster.ParseExternal("rediss://" + user + "@" + l.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = &cluster.TLSFiles{CAFile: certs.CAFile}
	e, err := cluster.ConnectExternal(ctx, cfg)
	if err != nil {
		t.Fatalf("ConnectExternal(%v): %v", cfg, err)
	}
	defer e.Close()
	if s := fmt.Sprintf("%v %+v", e.Config(), e.Config()); strings.Contains(s, userPw) {
		t.Errorf("config prints the password: %s", s)
	}
	if have := len(e.Nodes()); have != 4 {
		t.Errorf("external cluster has %d nodes, want 4", have)
	}
	if have := len(e.Primaries()); have != 2 {
		t.Errorf("external cluster has %d primaries, want 2", have)
	}
	if err := e.Kill(e.Primaries()[0].Addr); !errors.Is(err, cluster.ErrFaultsRefused) || !strings.Contains(err.Error(), "--allow-faults") {
		t.Errorf("Kill on an external cluster without AllowFaults: %v, want ErrFaultsRefused naming --allow-faults", err)
	}

	prefix, err := cluster.KeyPrefix("run-1")
	if err != nil {
		t.Fatal(err)
	}
	c := e.Client()
	const mine = 300
	for i := range mine {
		if err := c.Set(ctx, fmt.Sprintf("%srl:{tenant-%d}:read", prefix, i), i, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	others := []string{"ratelab:run-10:rl:{tenant-1}:read", "ratelab:run-1", "rl:{tenant-2}:read", "other:ratelab:run-1:x"}
	for _, k := range others {
		if err := c.Set(ctx, k, "keep", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := cluster.CleanupPrefix(ctx, c, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if n != mine {
		t.Errorf("CleanupPrefix deleted %d keys, want %d", n, mine)
	}
	var left atomic.Int64 // ForEachMaster runs the primaries concurrently
	err = c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, "ratelab:run-1:*").Result()
		left.Add(int64(len(keys)))
		return err
	})
	if err != nil || left.Load() != 0 {
		t.Errorf("%d keys with prefix %s remain (%v)", left.Load(), prefix, err)
	}
	for _, k := range others {
		if v, err := c.Get(ctx, k).Result(); err != nil || v != "keep" {
			t.Errorf("key %s with another prefix: %q, %v; want it kept", k, v, err)
		}
	}

	// A primary near its maxmemory fails the free-memory check; the error names the fix.
	err = c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return node.ConfigSet(ctx, "maxmemory", "8mb").Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cluster.ConnectExternal(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "maxmemory") || !strings.Contains(err.Error(), "MinFreeMemory") {
		t.Errorf("ConnectExternal with 8mb maxmemory: %v, want a free-memory failure", err)
	}
	// A wrong password fails without printing it.
	t.Setenv(cluster.PasswordEnv, "wrong-password-42")
	if _, err := cluster.ConnectExternal(ctx, cfg); err == nil || strings.Contains(err.Error(), "wrong-password-42") {
		t.Errorf("ConnectExternal with a wrong password: %v, want an error without the password", err)
	}
}

// dumpLogs logs the tail of every node's redis.log.
func dumpLogs(t *testing.T, l *cluster.Local) {
	for _, n := range l.Nodes() {
		b, err := os.ReadFile(filepath.Join(n.Dir, "redis.log"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		t.Logf("node %s (%s) redis.log (%v):\n%s", n.Addr, n.Role, err, strings.Join(lines, "\n"))
	}
}
