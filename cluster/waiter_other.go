//go:build !linux

package cluster

import (
	"net"
	"sync"
	"time"
)

// waiter sleeps on a runtime timer where timerfd(2) does not exist; sub-millisecond delays then
// come out up to about 1 ms long (see waiter_linux.go).
type waiter struct {
	t    *time.Timer
	done chan struct{}
	once sync.Once
}

func newWaiter() (*waiter, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{t: t, done: make(chan struct{})}, nil
}

// sleep blocks for d, or until close (then it returns net.ErrClosed).
func (w *waiter) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	w.t.Reset(d)
	select {
	case <-w.t.C:
		return nil
	case <-w.done:
		w.t.Stop()
		return net.ErrClosed
	}
}

func (w *waiter) close() error {
	w.once.Do(func() { close(w.done) })
	return nil
}
