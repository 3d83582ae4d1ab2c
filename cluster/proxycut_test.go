package cluster

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

// dialFrom dials addr from the loopback source address src.
func dialFrom(t *testing.T, src, addr string) (*net.TCPConn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn), nil
}

// echoes reports whether one byte written to c comes back within a second; the error says why
// not (a timeout means the connection is still open but nothing came back).
func echoes(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte{'x'}); err != nil {
		return err
	}
	_, err := io.ReadFull(c, make([]byte, 1))
	return err
}

// dialEchoes dials addr from src and echoes one byte. A refused connection may fail already in
// the dial: the proxy's reset can arrive before the kernel reports the connect complete.
func dialEchoes(t *testing.T, src, addr string) error {
	t.Helper()
	c, err := dialFrom(t, src, addr)
	if err != nil {
		return err
	}
	return echoes(c)
}

// TestProxyCutBySource: a proxy told to refuse one source address closes that source's open
// connection and refuses its new ones, while connections from 127.0.0.1 and another source
// stay open and new ones are served; setCut(false, nil) serves every source again.
func TestProxyCutBySource(t *testing.T) {
	t.Parallel()
	p := startProxy(t, echoServer(t), 0, 0)
	cut, other := "127.0.0.9", "127.0.0.10"
	conns := map[string]*net.TCPConn{}
	for _, src := range []string{"127.0.0.1", cut, other} {
		c, err := dialFrom(t, src, p.addr)
		if err == nil {
			err = echoes(c)
		}
		if err != nil {
			t.Fatalf("echo from %s before the cut: %v", src, err)
		}
		conns[src] = c
	}
	p.setCut(false, map[netip.Addr]bool{netip.MustParseAddr(cut): true})
	for src, c := range conns {
		err := echoes(c)
		if refused := err != nil && !errors.Is(err, os.ErrDeadlineExceeded); refused != (src == cut) {
			t.Errorf("echo from %s on a connection opened before the cut: %v; want it closed only for %s", src, err, cut)
		}
		if err := dialEchoes(t, src, p.addr); (err != nil) != (src == cut) {
			t.Errorf("echo from %s on a connection opened after the cut: %v; want it refused only for %s", src, err, cut)
		}
	}
	p.setCut(false, nil)
	if err := dialEchoes(t, cut, p.addr); err != nil {
		t.Errorf("echo from %s after the cut was lifted: %v", cut, err)
	}
}
