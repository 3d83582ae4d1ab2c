package gubernator

import (
	"context"
	"net"
	"strings"
	"testing"
)

// TestStartTakesNewPortsWhenOneIsTaken: a port found free can be taken before the daemon binds
// it (a parallel test, another process). Start then lays the cluster out again on new ports
// instead of failing: here the first layout hands daemon 0 an HTTP port a listener holds.
func TestStartTakesNewPortsWhenOneIsTaken(t *testing.T) {
	if _, err := FindBinary(); err != nil {
		t.Fatalf("%v", err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if err == nil && calls == 1 {
			ports[1] = taken.Addr().(*net.TCPAddr).Port // daemon 0's HTTP address
		}
		return ports, err
	}
	defer func() { pickPorts = freePorts }()
	c, err := Start(context.Background(), Options{Daemons: 2})
	if err != nil {
		t.Fatalf("Start with a taken port: %v", err)
	}
	defer c.Close()
	if calls != 2 || strings.HasSuffix(c.HTTPAddrs()[0], ":"+strings.Split(taken.Addr().String(), ":")[1]) {
		t.Errorf("layouts %d, daemon 0 on %s: want a second layout on a new port", calls, c.HTTPAddrs()[0])
	}
}
