//go:build ratelab_inject_delay

package engine

import (
	"context"
	"time"

	"ratelab/limiter"
)

// InjectedDelay is how much slower this build makes every decision: built with
// -tags ratelab_inject_delay, a build known to regress by 2 ms, which the regression gate's own
// test (cmd/ratelab TestCompareDetectsInjectedDelay) must catch. Never a release build: every
// summary of such a build says so in load.note.
const InjectedDelay = 2 * time.Millisecond

// delayedLimiter sleeps InjectedDelay in the decision path, before the limiter decides; the
// decision's latency (from its intended start) includes the sleep. It sleeps in nanosleep(2)
// (see preciseSleep), which overshoots by tens of µs where the runtime's timer overshoots by
// about 1 ms: the regression is 2 ms, not 3.
type delayedLimiter struct{ lim limiter.Limiter }

func (l delayedLimiter) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	preciseSleep(InjectedDelay)
	return l.lim.Allow(ctx, r)
}

func withInjectedDelay(l limiter.Limiter) limiter.Limiter { return delayedLimiter{l} }
