package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"syscall"
)

// Free ports are drawn from [freePortLow, freePortHigh] so that the bus port (port+10000) stays in
// [20000, 32767], below Linux's default ephemeral range (32768-60999): outgoing connections of
// this and other programs then never take a node's port between the check and redis-server's bind.
const (
	freePortLow  = 10000
	freePortHigh = 22767
	// freePortTries bounds the random draws for one port.
	freePortTries = 200
)

// reserved holds ports handed out by this process and not yet released, so that concurrent
// StartLocal calls (parallel tests) never pick the same port.
var reserved = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// portFree reports whether 127.0.0.1:port can be bound now, and the bind error otherwise.
func portFree(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return ln.Close()
}

// pairFree checks a node's client port and its bus port.
func pairFree(port int) error {
	if err := portFree(port); err != nil {
		return err
	}
	return portFree(port + busPortOffset)
}

// reservePort picks a random port p such that p and p+10000 are free and not reserved by this
// process, and reserves it until releasePort.
func reservePort() (int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	for range freePortTries {
		p := freePortLow + rand.IntN(freePortHigh-freePortLow+1)
		if reserved.ports[p] || reserved.ports[p+busPortOffset] || reserved.ports[p-busPortOffset] {
			continue
		}
		if pairFree(p) != nil {
			continue
		}
		reserved.ports[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("cluster: no free port pair (p, p+%d) found in %d tries in %d..%d; set Options.BasePort to a free range",
		busPortOffset, freePortTries, freePortLow, freePortHigh)
}

// reserveBasePorts reserves base, base+1, ... base+n-1, failing with ErrPortBusy on the first port
// (client or bus) that cannot be bound.
func reserveBasePorts(base, n int) ([]int, error) {
	reserved.Lock()
	defer reserved.Unlock()
	ports := make([]int, 0, n)
	for i := range n {
		p := base + i
		for _, q := range []int{p, p + busPortOffset} {
			err := portFree(q)
			if reserved.ports[p] {
				err = errors.New("reserved by another cluster of this process")
			}
			if err != nil {
				what := "port"
				if q != p {
					what = fmt.Sprintf("cluster bus port (node port %d + %d)", p, busPortOffset)
				}
				return nil, fmt.Errorf("cluster: %s %d on 127.0.0.1 is busy (%v): %w; choose another base port (e.g. %d) or 0 for free ports",
					what, q, shortErr(err), ErrPortBusy, base+1000)
			}
		}
		ports = append(ports, p)
	}
	for _, p := range ports {
		reserved.ports[p] = true
	}
	return ports, nil
}

// releasePort forgets a reservation.
func releasePort(p int) {
	reserved.Lock()
	delete(reserved.ports, p)
	reserved.Unlock()
}

// shortErr turns "listen tcp 127.0.0.1:7000: bind: address already in use" into its errno text.
func shortErr(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return "address already in use"
	}
	return err.Error()
}
