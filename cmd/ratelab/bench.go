package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ratelab/studies/bench"
)

// benchOptions are the flags of `ratelab bench`.
type benchOptions struct {
	out          string
	quick, quiet bool
	seconds      time.Duration
	conns, depth int
	linger       time.Duration
	clientProcs  int
	repeat       int
	gatewayConns int
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the generator, the in-memory bucket, central modes, the redis-benchmark ceiling, leases and the HTTP gateway",
		Long: `Start one local Redis Cluster (3 primaries x 1 replica) and measure, in this order:
  1. the generator alone (no-op limiter, 2,000,000 offered): decisions/s, schedule lag p99;
  2. the in-memory token bucket: decisions/s, allocations per decision;
  3. central decisions on one primary, closed loop, conns x depth callers each: go-redis plain
     calls, go-redis AutoPipeline, ratelab's coalescing pipelines: decisions/s, p50, p99; then
     the open loop, hot-tenant at 100,000 offered over 3 primaries: achieved, p50, p99, CPU per
     decision (generator, primaries, replicas) and script calls per read;
  4. redis-benchmark EVALSHA of the same script on the same primary, -c conns -P depth, and the
     ratio of the best central mode to it;
  5. hot-tenant-lease at 100,000 offered: achieved ratio, p99;
  6. the HTTP gateway (in this process, on a loopback port) under wrk, closed loop: a bare
     net/http handler, the gateway with the in-memory bucket, with the Redis coalescing bucket:
     requests/s, p99, and each gateway's ratio to bare.
With --repeat N every section runs N times and each figure is the median (min-max) of them.
Writes OUT/README.md (a Markdown table with each target and whether it was met, the command,
the machine) and OUT/raw.json (every repetition's numbers).
Needs redis-server, redis-benchmark (make redis) and wrk (apt-get install wrk).`,
		Example: "  ratelab bench\n  ratelab bench --quick --out /tmp/bench\n  ratelab bench --repeat 5",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logf := func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
			if o.quiet {
				logf = nil
			}
			rep, err := bench.Measure(ctx, bench.Options{
				Out: o.out, Quick: o.quick, Seconds: o.seconds, Conns: o.conns, Depth: o.depth, Linger: &o.linger, ClientProcs: o.clientProcs,
				Repeat: o.repeat, GatewayConns: o.gatewayConns,
				Command: "ratelab " + strings.Join(os.Args[1:], " "), Version: version, Logf: logf,
			})
			if err != nil {
				return interruptedErr(ctx, err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\nwritten: %s, %s\n", bench.Markdown(rep),
				filepath.Join(o.out, bench.ReadmeFile), filepath.Join(o.out, bench.RawFile))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", bench.DefaultOut, "`DIR` for README.md and raw.json")
	f.BoolVar(&o.quick, "quick", false, "short sections (about 20 s in all): a smoke test, noisy numbers")
	f.DurationVar(&o.seconds, "seconds", 0, fmt.Sprintf("length of each central variant (default %v, %v with --quick); scenarios run twice as long", bench.DefaultSeconds, bench.QuickSeconds))
	f.IntVar(&o.conns, "conns", bench.DefaultConns, "connections to the primary: coalescing pipelines in flight and redis-benchmark -c")
	f.IntVar(&o.depth, "depth", bench.DefaultDepth, "pipeline depth: coalescing batch size and redis-benchmark -P")
	f.DurationVar(&o.linger, "linger", bench.DefaultLinger, "coalescing: how long a short batch waits to fill while another pipeline is in flight (0: send at once)")
	f.IntVar(&o.clientProcs, "client-procs", bench.DefaultClientProcs, "GOMAXPROCS of the Go client during the central variants (redis-benchmark is one thread)")
	f.IntVar(&o.repeat, "repeat", bench.DefaultRepeat, "run every section N times; the table shows each figure's median and range, and each target met in k of N")
	f.IntVar(&o.gatewayConns, "gateway-conns", bench.DefaultGatewayConns, "wrk connections (closed loop) of the gateway section, the same for every variant")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}
