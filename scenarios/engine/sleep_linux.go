//go:build linux

package engine

import (
	"syscall"
	"time"
)

// preciseSleep blocks the calling OS thread in nanosleep(2). The Go runtime's timers wake about
// 1 ms late on this kernel (measured: time.Sleep(100µs) overshoots by ~1 ms at p50), and every
// microsecond of dispatch lag counts in the measured latency, because latency is timed from the
// intended start. nanosleep on a locked thread overshoots by ~50-100 µs. The caller must hold
// runtime.LockOSThread.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
