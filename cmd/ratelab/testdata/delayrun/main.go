// Command delayrun runs a scenario file on a running cluster, as `ratelab run --cluster running
// --state STATE --out OUT` does, with every decision delayed by -delay before the limiter
// decides: the regression of known size TestCompareDetectsInjectedDelay plants. The delay
// sleeps in nanosleep(2), which overshoots by tens of µs where the runtime's timer overshoots
// by about 1 ms.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"ratelab/limiter"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

type delayed struct {
	limiter.Limiter
	ts syscall.Timespec
}

func (d delayed) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	ts := d.ts
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
	return d.Limiter.Allow(ctx, r)
}

func main() {
	state := flag.String("state", "", "the running cluster's state file")
	out := flag.String("out", "", "the run directory")
	delay := flag.Duration("delay", 0, "delay of every decision")
	flag.Parse()
	if err := run(flag.Arg(0), *state, *out, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "delayrun:", err)
		os.Exit(1)
	}
}

func run(file, state, out string, delay time.Duration) error {
	spec, err := scenarios.LoadFile(file)
	if err != nil {
		return err
	}
	spec.Cluster.Provider, spec.Cluster.URL = scenarios.ProviderRunning, ""
	opts := engine.Options{Out: out, StateFile: state}
	if delay > 0 {
		ts := syscall.NsecToTimespec(delay.Nanoseconds())
		opts.Wrap = func(l limiter.Limiter) limiter.Limiter { return delayed{Limiter: l, ts: ts} }
	}
	_, err = engine.Run(context.Background(), spec, opts)
	return err
}
