//go:build linux

package engine

import (
	"syscall"
	"time"
)

// preciseSleep blocks the calling OS thread in nanosleep(2). The Go runtime's timers can wake
// up to a millisecond late, and every microsecond of dispatch lag counts in the measured
// latency, because latency is timed from the intended start; nanosleep on a locked thread
// overshoots by tens of microseconds (docs/architecture.md). The caller must hold
// runtime.LockOSThread.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
