package bench

import (
	"context"
	"fmt"
	"time"

	"ratelab/cluster"
)

// serverUse adds up what the target primary's main thread did during the measured segments of
// one variant: its CPU time (INFO cpu, user + sys of the main thread) and its script calls (INFO
// commandstats), against the segments' wall time. It says which side limits a variant: a main
// thread busy nearly all the time is the ceiling itself, one that idles waits for the client; and
// CPU per call shows whether the client's traffic costs Redis more per decision than
// redis-benchmark's does (smaller reads, more system calls).
type serverUse struct {
	cpuSec float64
	calls  int64
	wall   time.Duration
}

// during runs segment, which returns the wall time it measured, and books what the main thread
// of the primary at addr did meanwhile (INFO before and after).
func (u *serverUse) during(ctx context.Context, addr string, segment func() time.Duration) error {
	before, err := cluster.ReadNodeStats(ctx, []string{addr})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	d := segment()
	after, err := cluster.ReadNodeStats(ctx, []string{addr})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	u.cpuSec += after.CPUSeconds - before.CPUSeconds
	u.calls += after.Calls - before.Calls
	u.wall += d
	return nil
}

// add books what v measured into u.
func (u *serverUse) add(v serverUse) {
	u.cpuSec += v.cpuSec
	u.calls += v.calls
	u.wall += v.wall
}

// busy is the main thread's CPU time over the wall time (0..1, a little above 1 from INFO's
// rounding); 0 before any segment.
func (u *serverUse) busy() float64 {
	if u.wall <= 0 {
		return 0
	}
	return u.cpuSec / u.wall.Seconds()
}

// usPerCall is the main thread's CPU time per script call in µs; 0 without calls.
func (u *serverUse) usPerCall() float64 {
	if u.calls <= 0 {
		return 0
	}
	return 1e6 * u.cpuSec / float64(u.calls)
}
