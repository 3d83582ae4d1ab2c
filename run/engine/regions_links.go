package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"ratelab/cluster"
)

// regionLinks are one region's forwarders to another region's cluster, one per node address.
// Its dial is the go-redis Dialer of that region's client: every connection to a node, the
// first slot-map read and a MOVED target included, goes through the node's forwarder, so
// every call pays the round trip, and cutting the links cuts every call.
type regionLinks struct {
	delay, jitter time.Duration // each direction
	mu            sync.Mutex
	fw            map[string]*cluster.Forwarder // by node address
	cut           bool
	dialer        net.Dialer
}

// newRegionLinks starts a forwarder to every node, each direction holding rtt/2 ± jitter.
func newRegionLinks(nodes []cluster.Node, rtt, jitter time.Duration) (*regionLinks, error) {
	l := &regionLinks{delay: rtt / 2, jitter: jitter, fw: map[string]*cluster.Forwarder{}}
	for _, n := range nodes {
		if _, err := l.link(n.Addr); err != nil {
			return nil, errors.Join(err, l.close())
		}
	}
	return l, nil
}

// link returns the forwarder to addr, started on first use (a node the slot map names later).
func (l *regionLinks) link(addr string) (*cluster.Forwarder, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.fw[addr]; f != nil {
		return f, nil
	}
	f, err := cluster.NewForwarder(addr)
	if err != nil {
		return nil, fmt.Errorf("forwarder to %s: %w", addr, err)
	}
	f.SetLatency(l.delay, l.jitter)
	if l.cut {
		f.Cut()
	}
	l.fw[addr] = f
	return f, nil
}

// dial connects to addr's forwarder instead of addr.
func (l *regionLinks) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f, err := l.link(addr)
	if err != nil {
		return nil, err
	}
	return l.dialer.DialContext(ctx, network, f.Addr())
}

// setCut cuts every forwarder (and the ones started later), or restores them.
func (l *regionLinks) setCut(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = cut
	for _, f := range l.fw {
		if cut {
			f.Cut()
		} else {
			f.Restore()
		}
	}
}

// close stops every forwarder.
func (l *regionLinks) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, f := range l.fw {
		errs = append(errs, f.Close())
	}
	l.fw = map[string]*cluster.Forwarder{}
	return errors.Join(errs...)
}
