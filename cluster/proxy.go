package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The latency proxy. With Options.Proxy every node gets one, on a free loopback port that the
// node announces (cluster-announce-port), so clients, MOVED/ASK redirects and replicas all
// connect through it; SetLatency then delays every chunk of bytes it forwards, in both
// directions: one request/reply round trip gains 2 x delay, like netem on an interface.
//
// Why a proxy of our own and not Toxiproxy: Toxiproxy is not installable here from the
// registries this project may use, it would be one more process to start and stop, and its
// latency toxic sleeps on Go runtime timers, which can wake up to a millisecond late (see
// waiter_linux.go). The faults that matter are a few milliseconds on a loopback where Redis
// answers in a fraction of one, so the proxy runs in-process and waits on a timerfd
// (waiter_linux.go); BenchmarkProxyRoundTrip measures what it adds beyond the fault.

const (
	// proxyDialTimeout bounds the proxy's connect to its redis-server. On loopback a dead node
	// refuses at once and a paused one is still accepted by the kernel, so it rarely matters.
	proxyDialTimeout = time.Second
	// proxyChunk is the buffer of one delayed chunk and of a bulk read: the largest chunk that
	// is delayed as a unit.
	proxyChunk = 16 << 10
	// proxyReadBuf is the buffer an idle direction blocks on (see pipe): a command or a reply
	// of the limiter's scripts is tens of bytes.
	proxyReadBuf = 2 << 10
	// proxyQueue is how many chunks one direction holds in flight (read, waiting for their
	// release time). When it is full the reader stops reading and TCP flow control pushes back.
	proxyQueue = 128
	// acceptBackoff spaces out Accept retries after a transient error.
	acceptBackoff = 5 * time.Millisecond
)

// latency is a proxy's current fault: each chunk waits delay + U[-jitter, +jitter], at least 0.
type latency struct {
	delay, jitter time.Duration
}

// sample draws one chunk's delay. It allocates nothing (math/rand/v2's global source is
// per-thread and safe for concurrent use).
func (l *latency) sample() time.Duration {
	if l == nil {
		return 0
	}
	d := l.delay
	if l.jitter > 0 {
		d += time.Duration(rand.Int64N(2*int64(l.jitter)+1)) - l.jitter
	}
	return max(d, 0)
}

// proxy forwards every connection accepted on ln to target, delaying chunks by lat.
type proxy struct {
	ln   net.Listener
	addr string // "127.0.0.1:PORT" of ln
	port int
	lat  atomic.Pointer[latency]

	mu     sync.Mutex
	target string // redis-server's address; set before the node is announced
	links  map[*link]struct{}
	closed bool
	// cutAll refuses every connection; cutFrom refuses the connections from these source
	// addresses (see setCut).
	cutAll  bool
	cutFrom map[netip.Addr]bool
	wg      sync.WaitGroup // accept loop and every link's goroutines
}

// newProxy listens on a free loopback port. The port comes from the kernel's ephemeral range:
// nothing has to be checked and reserved, because the listener holds it from now on.
func newProxy() (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cluster: proxy: listen on 127.0.0.1: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	p := &proxy{ln: ln, addr: "127.0.0.1:" + strconv.Itoa(port), port: port, links: map[*link]struct{}{}}
	p.wg.Go(p.serve)
	return p, nil
}

// setTarget names the redis-server behind the proxy; new connections go there.
func (p *proxy) setTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// setLatency applies to every chunk read from now on; chunks already queued keep their release
// times, and no chunk overtakes an earlier one of the same direction.
func (p *proxy) setLatency(delay, jitter time.Duration) {
	if delay == 0 && jitter == 0 {
		p.lat.Store(nil)
		return
	}
	p.lat.Store(&latency{delay: delay, jitter: jitter})
}

// setCut replaces what the proxy refuses: every connection (all), or those whose source
// address is in from. Open connections it now refuses are closed at once; a refused new
// connection is accepted and reset at once, so its client sees a connection error. setCut(false,
// nil) refuses nothing.
func (p *proxy) setCut(all bool, from map[netip.Addr]bool) {
	p.mu.Lock()
	p.cutAll, p.cutFrom = all, from
	var cut []*link
	for l := range p.links {
		if p.refusesLocked(l.src) {
			cut = append(cut, l)
		}
	}
	p.mu.Unlock()
	for _, l := range cut {
		l.abort()
	}
}

// refusesLocked reports whether a connection from src is refused. p.mu is held.
func (p *proxy) refusesLocked(src netip.Addr) bool { return p.cutAll || p.cutFrom[src] }

// sampleDelay draws the delay of one chunk under the current latency.
func (p *proxy) sampleDelay() time.Duration { return p.lat.Load().sample() }

// serve accepts until the listener is closed.
func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(acceptBackoff) // e.g. EMFILE: keep serving, without spinning
			continue
		}
		tc := c.(*net.TCPConn)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			return
		}
		if p.refusesLocked(sourceOf(tc)) {
			p.mu.Unlock()
			reset(tc)
			continue
		}
		target := p.target
		p.wg.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			p.handle(tc, target)
		}()
	}
}

// handle connects one client to target and starts both directions. When the node is down the
// dial is refused and the client's connection is closed: clients see a connection error, as
// they would without the proxy.
func (p *proxy) handle(client *net.TCPConn, target string) {
	sc, err := net.DialTimeout("tcp", target, proxyDialTimeout)
	if err != nil {
		_ = client.Close()
		return
	}
	l, err := newLink(p, client, sc.(*net.TCPConn))
	if err != nil {
		_ = client.Close()
		_ = sc.Close()
		return
	}
	p.mu.Lock()
	if p.closed || p.refusesLocked(l.src) { // closed or cut while dialing
		p.mu.Unlock()
		l.abort()
		return
	}
	p.links[l] = struct{}{}
	p.wg.Add(2) // the readers; each starts its writer when it first delays a chunk
	p.mu.Unlock()
	for _, f := range []func(){l.up.read, l.down.read} {
		go func() {
			defer p.wg.Done()
			f()
		}()
	}
}

// sourceOf is the source address of an accepted connection, IPv4 in its 4-byte form.
func sourceOf(c *net.TCPConn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// reset closes c with a TCP reset instead of an orderly close: a refused client fails at once
// on its next read or write, as against a port nothing listens on.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

// forget drops a finished link.
func (p *proxy) forget(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// close stops accepting, cuts every connection and waits for the proxy's goroutines. A writer
// asleep until a chunk's release time is woken by its waiter's close.
func (p *proxy) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.abort()
	}
	p.wg.Wait()
	return err
}
