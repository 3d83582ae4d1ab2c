package cluster

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Forwarder is a TCP forwarder on a free loopback port to one loopback target, with the latency
// proxy's forwarding (the same code as Options.Proxy) and a switch that cuts it. A region's
// clients dial a forwarder instead of a node to pay an inter-region round trip, and a cut
// forwarder stands for a lost link between regions. It is safe for concurrent use.
type Forwarder struct {
	p *proxy
}

// NewForwarder listens on a free port of 127.0.0.1 and forwards every connection it accepts to
// target, a loopback "IP:PORT" (127.0.0.0/8 or ::1) or "localhost:PORT". It starts with no
// latency and not cut. Nothing is dialed until a client connects: a target that does not answer
// then closes that client's connection.
func NewForwarder(target string) (*Forwarder, error) {
	if err := checkLoopbackTarget(target); err != nil {
		return nil, err
	}
	p, err := newProxy()
	if err != nil {
		return nil, err
	}
	p.setTarget(target)
	return &Forwarder{p: p}, nil
}

// checkLoopbackTarget accepts "IP:PORT" with a loopback IP, or "localhost:PORT".
func checkLoopbackTarget(target string) error {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return fmt.Errorf("cluster: NewForwarder: target = %q: %v; want a loopback \"127.0.0.1:PORT\"", target, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > maxPort {
		return fmt.Errorf("cluster: NewForwarder: target = %q: port %q: want 1..%d", target, port, maxPort)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return fmt.Errorf("cluster: NewForwarder: target = %q: host %q is not a loopback IP; want 127.0.0.0/8, ::1 or localhost (every server and load stays on loopback)", target, host)
	}
	return nil
}

// Addr is the "127.0.0.1:PORT" clients dial instead of the target.
func (f *Forwarder) Addr() string { return f.p.addr }

// SetLatency delays, from now on, every chunk of bytes forwarded in either direction by delay ±
// a uniform jitter (never below 0), as Local.SetLatency does for a node's proxy: a request/reply
// round trip gains about 2 x delay, and bytes keep their order per direction. Chunks already in
// flight keep the delay they were given. A negative delay or jitter counts as 0; SetLatency(0,
// 0) restores pass-through.
func (f *Forwarder) SetLatency(delay, jitter time.Duration) {
	f.p.setLatency(max(delay, 0), max(jitter, 0))
}

// Cut closes every connection through the forwarder and, until Restore, refuses new ones: a new
// connection is accepted and reset at once, so its client's first read or write fails. The
// listener stays open, so Restore serves on the same address.
func (f *Forwarder) Cut() { f.p.setCut(true, nil) }

// Restore undoes Cut: new connections are forwarded again (the ones Cut closed stay closed).
func (f *Forwarder) Restore() { f.p.setCut(false, nil) }

// Close stops listening, closes every connection and waits for the forwarder's goroutines.
// It is idempotent.
func (f *Forwarder) Close() error { return f.p.close() }
