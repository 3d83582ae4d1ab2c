package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"
)

// echoServer accepts on a loopback port and echoes every connection until EOF, then closes it.
func echoServer(t testing.TB) string {
	return serveConns(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// serveConns accepts on a loopback port until the test ends and runs handle on each connection
// in a goroutine of its own, closing the connection after it.
func serveConns(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// startProxy starts a proxy in front of target, closed when the test ends.
func startProxy(t testing.TB, target string, delay, jitter time.Duration) *proxy {
	t.Helper()
	p, err := newProxy()
	if err != nil {
		t.Fatal(err)
	}
	p.setTarget(target)
	p.setLatency(delay, jitter)
	t.Cleanup(func() { _ = p.close() })
	return p
}

func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// TestLatencySample: every sampled delay lies in [delay-jitter, delay+jitter] clamped at 0, and
// jitter spreads the samples.
func TestLatencySample(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have     *latency
		min, max time.Duration
	}{
		{nil, 0, 0},
		{&latency{delay: 5 * time.Millisecond}, 5 * time.Millisecond, 5 * time.Millisecond},
		{&latency{delay: 5 * time.Millisecond, jitter: time.Millisecond}, 4 * time.Millisecond, 6 * time.Millisecond},
		{&latency{delay: time.Millisecond, jitter: 3 * time.Millisecond}, 0, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		seen := map[time.Duration]bool{}
		for range 1000 {
			d := tt.have.sample()
			if d < tt.min || d > tt.max {
				t.Fatalf("%+v.sample() = %v, want %v..%v", tt.have, d, tt.min, tt.max)
			}
			seen[d] = true
		}
		if spread := tt.have != nil && tt.have.jitter > 0; spread != (len(seen) > 1) {
			t.Errorf("%+v: %d distinct samples in 1000", tt.have, len(seen))
		}
	}
}

// TestProxyRoundTrip: an echo round trip through the proxy takes at least 2 x (delay - jitter):
// each direction waits once.
func TestProxyRoundTrip(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	tests := []struct {
		name          string
		delay, jitter time.Duration
	}{
		{"pass-through", 0, 0},
		{"2ms", 2 * time.Millisecond, 0},
		{"3ms ±1ms", 3 * time.Millisecond, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startProxy(t, echo, tt.delay, tt.jitter)
			c := dial(t, p.addr)
			lo, hi := 2*(tt.delay-tt.jitter), 2*(tt.delay+tt.jitter)
			var rtts []time.Duration
			buf := make([]byte, 1)
			for range 15 {
				began := time.Now()
				if _, err := c.Write([]byte{'x'}); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					t.Fatal(err)
				}
				rtts = append(rtts, time.Since(began))
			}
			slices.Sort(rtts)
			t.Logf("round trip min %v p50 %v max %v (bounds %v..%v)", rtts[0], rtts[7], rtts[14], lo, hi)
			if rtts[0] < lo {
				t.Errorf("fastest round trip %v, want >= %v", rtts[0], lo)
			}
			// Generous: the median must not be far above the bound (e.g. not a whole extra
			// millisecond per hop as Go timers would add), on a busy 2-core machine.
			if rtts[7] > hi+3*time.Millisecond {
				t.Errorf("median round trip %v, want <= %v", rtts[7], hi+3*time.Millisecond)
			}
		})
	}
}

// TestProxyKeepsOrder: with jitter far larger than the gap between writes, later chunks draw
// shorter delays than earlier ones; the bytes must still arrive in order, complete.
func TestProxyKeepsOrder(t *testing.T) {
	t.Parallel()
	p := startProxy(t, echoServer(t), 2*time.Millisecond, 2*time.Millisecond)
	c := dial(t, p.addr)
	const n = 400
	var want bytes.Buffer
	go func() {
		var b [4]byte
		for i := range uint32(n) {
			binary.BigEndian.PutUint32(b[:], i)
			if _, err := c.Write(b[:]); err != nil {
				return
			}
			if i%8 == 0 {
				time.Sleep(50 * time.Microsecond) // separate reads, so separate chunks
			}
		}
		_ = c.CloseWrite()
	}()
	for i := range uint32(n) {
		_ = binary.Write(&want, binary.BigEndian, i)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	have, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read through the proxy: %v", err)
	}
	if !bytes.Equal(have, want.Bytes()) {
		for i := 0; i+4 <= len(have); i += 4 {
			if got := binary.BigEndian.Uint32(have[i:]); got != uint32(i/4) {
				t.Fatalf("message %d arrived as %d (%d of %d bytes): bytes were reordered", i/4, got, len(have), want.Len())
			}
		}
		t.Fatalf("got %d bytes, want %d", len(have), want.Len())
	}
}

// TestProxyHalfClose: what is queued when the client half-closes is still delivered, and the
// half-close reaches the server after it (the echo then ends the connection).
func TestProxyHalfClose(t *testing.T) {
	t.Parallel()
	p := startProxy(t, echoServer(t), 5*time.Millisecond, 0)
	c := dial(t, p.addr)
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	have, err := io.ReadAll(c)
	if err != nil || string(have) != "hello" {
		t.Errorf("read after half-close = %q, %v; want %q then EOF", have, err, "hello")
	}
}

// TestProxyTargetDown: with nothing behind the proxy, a client's connection is accepted and then
// closed: a connection error, never a hang.
func TestProxyTargetDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	p := startProxy(t, dead, 0, 0)
	c := dial(t, p.addr)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write([]byte("PING\r\n"))
	n, err := c.Read(make([]byte, 16))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("read through a proxy to a dead target = %d bytes, %v; want EOF or reset", n, err)
	}
}

// TestProxyCloseWakesSleepers: close returns promptly even while a chunk waits for a release
// time far away, and the client sees its connection end.
func TestProxyCloseWakesSleepers(t *testing.T) {
	t.Parallel()
	p := startProxy(t, echoServer(t), time.Hour, 0)
	c := dial(t, p.addr)
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let the chunk reach the writer's wait; not a correctness wait
	done := make(chan error, 1)
	go func() { done <- p.close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return within 5 s with a chunk delayed by an hour")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("read after close = %d bytes, want the connection closed", n)
	}
	if _, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		t.Errorf("the closed proxy still accepts")
	}
}

// TestWaiter: a sleep lasts at least its duration; close interrupts a long one.
func TestWaiter(t *testing.T) {
	t.Parallel()
	w, err := newWaiter()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{100 * time.Microsecond, time.Millisecond} {
		began := time.Now()
		if err := w.sleep(d); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took < d {
			t.Errorf("sleep(%v) took %v", d, took)
		}
	}
	done := make(chan error, 1)
	go func() { done <- w.sleep(time.Hour) }()
	time.Sleep(10 * time.Millisecond) // let it start sleeping; either order must end the sleep
	_ = w.close()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("sleep interrupted by close returned nil")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("close did not interrupt sleep(1h)")
	}
}

// BenchmarkProxyRoundTrip measures a 16-byte echo round trip: straight to the echo server, and
// through the proxy without a fault and with 0.5 ms and 1 ms per direction. overshoot-µs is the
// round trip minus the direct one minus 2 x delay: what the proxy adds beyond the fault.
func BenchmarkProxyRoundTrip(b *testing.B) {
	echo := echoServer(b)
	direct := roundTrips(b, echo, 200)
	for _, bc := range []struct {
		name  string
		delay time.Duration
		via   bool
	}{{"direct", 0, false}, {"proxy", 0, true}, {"proxy-500us", 500 * time.Microsecond, true}, {"proxy-1ms", time.Millisecond, true}} {
		b.Run(bc.name, func(b *testing.B) {
			addr := echo
			if bc.via {
				addr = startProxy(b, echo, bc.delay, 0).addr
			}
			c := dial(b, addr)
			msg, buf := make([]byte, 16), make([]byte, 16)
			b.ReportAllocs()
			b.ResetTimer()
			began := time.Now()
			for b.Loop() {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
			per := time.Since(began) / time.Duration(b.N)
			b.ReportMetric(float64(per.Microseconds()), "µs/rtt")
			b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "round-trips/s")
			b.ReportMetric(float64((per - direct - 2*bc.delay).Microseconds()), "overshoot-µs")
		})
	}
}

// roundTrips returns the median of n echo round trips to addr.
func roundTrips(b *testing.B, addr string, n int) time.Duration {
	c := dial(b, addr)
	msg, buf := make([]byte, 16), make([]byte, 16)
	ts := make([]time.Duration, n)
	for i := range ts {
		began := time.Now()
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		ts[i] = time.Since(began)
	}
	slices.Sort(ts)
	return ts[n/2]
}

// TestProxyIdleLinkFootprint: what an idle connection through the proxy costs the process, over
// the same connections made directly (go-redis keeps pools of them, and a pause churns through
// hundreds a second; see pipe). Not parallel: it reads the whole process's heap and goroutines.
func TestProxyIdleLinkFootprint(t *testing.T) {
	const links = 200
	// A server of our own with one goroutine and a 64-byte buffer per connection, so the only
	// difference between the two measurements is the proxy.
	server := serveConns(t, func(c net.Conn) {
		buf := make([]byte, 64)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	})
	// measure opens links connections to addr, makes one round trip on each (so every link is
	// set up and has forwarded in both directions), and returns the growth in heap + stacks and
	// goroutines; the connections stay open until the test ends.
	settle := func() { runtime.GC(); runtime.GC() } // twice: the second empties sync.Pool's victim cache
	measure := func(addr string) (bytes float64, goroutines int) {
		settle()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		conns := make([]net.Conn, 0, links)
		buf := make([]byte, 8)
		for range links {
			c := dial(t, addr)
			if _, err := c.Write([]byte("PING\r\n")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, buf[:6]); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		settle()
		runtime.ReadMemStats(&after)
		g := runtime.NumGoroutine() - g0
		runtime.KeepAlive(conns)
		grown := float64(after.HeapAlloc+after.StackInuse) - float64(before.HeapAlloc+before.StackInuse)
		return grown / links, g
	}
	directBytes, directG := measure(server)
	p := startProxy(t, server, 0, 0)
	proxyBytes, proxyG := measure(p.addr)
	perLink := proxyBytes - directBytes
	extraG := float64(proxyG-directG) / links
	t.Logf("per idle link: %.1f KB of heap and stacks, %.2f goroutines (direct connection: %.1f KB, %d goroutines for %d)",
		perLink/1024, extraG, directBytes/1024, directG, links)
	if extraG < 1.9 || extraG > 2.1 {
		t.Errorf("%.2f goroutines per idle link, want 2 (one reader per direction; writers start with the first delayed chunk)", extraG)
	}
	if perLink > 32<<10 {
		t.Errorf("%.1f KB per idle link, want <= 32 KB", perLink/1024)
	}
}
