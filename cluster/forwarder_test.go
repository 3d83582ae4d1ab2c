package cluster_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// rawPing sends PING on c and returns the reply line, or the error of the write or the read
// (a read that times out after bound is an error too).
func rawPing(c net.Conn, r *bufio.Reader, bound time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(bound))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	return strings.TrimSpace(line), err
}

// dialPing dials addr and PINGs once on the new connection.
func dialPing(t *testing.T, addr string) (net.Conn, *bufio.Reader, string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, nil, "", err
	}
	t.Cleanup(func() { _ = c.Close() })
	r := bufio.NewReader(c)
	reply, err := rawPing(c, r, 2*time.Second)
	return c, r, reply, err
}

// TestForwarder: a forwarder in front of a real node answers PING; with SetLatency(d/2) every
// round trip takes at least d and after SetLatency(0, 0) the median is back below d/2. Cut
// closes an open connection (its read ends with an error, not a timeout) and refuses a new one;
// Restore serves new connections on the same address again.
func TestForwarder(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
	f, err := cluster.NewForwarder(l.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if f.Addr() == l.Addrs()[0] || !strings.HasPrefix(f.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr() = %s: want a loopback port of its own, not the node's %s", f.Addr(), l.Addrs()[0])
	}

	const d = 20 * time.Millisecond
	c := plainClient(t, f.Addr())
	if p50 := pingTimes(t, c, 9)[4]; p50 >= d/2 {
		t.Errorf("median PING without latency = %v, want < %v", p50, d/2)
	}
	f.SetLatency(d/2, 0)
	if fastest := pingTimes(t, c, 9)[0]; fastest < d {
		t.Errorf("fastest PING with SetLatency(%v) = %v, want >= %v (each direction waits once)", d/2, fastest, d)
	}
	f.SetLatency(0, 0)
	if p50 := pingTimes(t, c, 9)[4]; p50 >= d/2 {
		t.Errorf("median PING after SetLatency(0, 0) = %v, want < %v", p50, d/2)
	}

	open, r, reply, err := dialPing(t, f.Addr())
	if err != nil || reply != "+PONG" {
		t.Fatalf("PING before the cut = %q, %v; want +PONG", reply, err)
	}
	f.Cut()
	_ = open.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read on a connection open before Cut = %v; want it closed (EOF or reset), not open", err)
	}
	if _, _, reply, err := dialPing(t, f.Addr()); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("PING on a connection dialed after Cut = %q, %v; want a connection error", reply, err)
	}
	f.Restore()
	if _, _, reply, err := dialPing(t, f.Addr()); err != nil || reply != "+PONG" {
		t.Errorf("PING after Restore = %q, %v; want +PONG", reply, err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v, want nil (idempotent)", err)
	}
	if _, _, _, err := dialPing(t, f.Addr()); err == nil {
		t.Errorf("PING after Close succeeded; want the forwarder gone")
	}
}

// TestNewForwarderTarget: a target that is not a loopback host:port is refused with an error
// naming it.
func TestNewForwarderTarget(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"", "127.0.0.1", "10.0.0.1:6379", "example.com:6379", "127.0.0.1:0", "127.0.0.1:x"} {
		f, err := cluster.NewForwarder(target)
		if err == nil {
			_ = f.Close()
			t.Errorf("NewForwarder(%q) = nil error, want a refusal", target)
			continue
		}
		if !strings.Contains(err.Error(), "target = \""+target+"\"") {
			t.Errorf("NewForwarder(%q) = %v, want the error to name the target", target, err)
		}
	}
	for _, target := range []string{"127.0.0.1:6379", "127.0.0.2:6379", "localhost:6379", "[::1]:6379"} {
		f, err := cluster.NewForwarder(target)
		if err != nil {
			t.Errorf("NewForwarder(%q) = %v, want it accepted", target, err)
			continue
		}
		_ = f.Close()
	}
}
