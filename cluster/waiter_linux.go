//go:build linux

package cluster

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Linux timerfd(2) constants (syscall has the syscall numbers but not these).
const (
	clockMonotonic = 1
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

// itimerspec is struct itimerspec of timerfd_settime(2).
type itimerspec struct {
	interval syscall.Timespec
	value    syscall.Timespec
}

// waiter sleeps with microsecond precision without holding an OS thread.
//
// Why not time.Sleep or time.Timer: the Go runtime parks idle threads in epoll_pwait, whose
// timeout is in whole milliseconds, so a sub-millisecond timer can fire up to a millisecond
// late: as much as the faults the proxy injects. A timerfd is an fd: os.NewFile registers
// the non-blocking fd with the runtime's netpoller, so Read parks the goroutine and epoll wakes it
// as soon as the kernel's hrtimer fires (late by the timer slack, 50 µs by default, plus a
// wake-up). BenchmarkProxyRoundTrip measures the round trip through the proxy with this waiter.
// Closing the file wakes a sleeping Read with an error.
type waiter struct {
	f   *os.File
	rc  syscall.RawConn // arms the timer through the file, so a closed fd is never touched
	its itimerspec
	// arm sets its on the fd; built once so that sleep allocates nothing.
	arm   func(fd uintptr)
	errno syscall.Errno
	buf   [8]byte // the expiration count timerfd reads return
}

// newWaiter creates a monotonic timerfd.
func newWaiter() (*waiter, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil, fmt.Errorf("cluster: proxy: timerfd_create: %w", errno)
	}
	w := &waiter{f: os.NewFile(fd, "timerfd")}
	rc, err := w.f.SyscallConn()
	if err != nil {
		_ = w.f.Close()
		return nil, fmt.Errorf("cluster: proxy: timerfd: %w", err)
	}
	w.rc = rc
	w.arm = func(fd uintptr) {
		_, _, w.errno = syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&w.its)), 0, 0, 0)
	}
	return w, nil
}

// sleep blocks the goroutine for d, or until close; it returns the error of an interrupted or
// failed wait. One goroutine at a time may sleep on a waiter.
func (w *waiter) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	// Relative one-shot expiry (flags 0, zero interval). A zero value would disarm the timer;
	// d > 0 keeps it armed. Control fails once the file is closed: the fd number may already
	// belong to another file then.
	w.its = itimerspec{value: syscall.NsecToTimespec(int64(d))}
	if err := w.rc.Control(w.arm); err != nil {
		return err
	}
	if w.errno != 0 {
		return fmt.Errorf("cluster: proxy: timerfd_settime: %w", w.errno)
	}
	_, err := w.f.Read(w.buf[:])
	return err
}

// close releases the timerfd and wakes a sleep in progress. Call it once.
func (w *waiter) close() error { return w.f.Close() }
