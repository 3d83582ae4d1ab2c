package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"ratelab/scenarios/attack"
	"ratelab/workload/trace"
)

// attackFlags are `ratelab attack`'s flags that need parsing before they fit attack.Options.
type attackFlags struct {
	policy    string
	endpoints string
	trace     string
	quiet     bool
}

// newAttackCmd is `ratelab attack`: HTTP load with vegeta against a gateway or any
// rate-limited API, recorded as a ratelab run.
func newAttackCmd() *cobra.Command {
	var (
		o attack.Options
		f attackFlags
	)
	cmd := &cobra.Command{
		Use:   "attack --url URL",
		Short: "Drive an HTTP endpoint with vegeta and record it as a ratelab run",
		Long: `Send Zipf-skewed tenants' requests to an HTTP endpoint (ratelab gateway, or any rate-limited
API) with vegeta, each with its tenant's API key, on an open-loop schedule. Writes a run directory:
summary.json, timeseries.csv, plots and report.html as 'ratelab run' does, and vegeta's own
results.bin ('vegeta report results.bin', 'vegeta plot results.bin'). Latency counts from each
request's intended start. Overspend is judged black-box: 200 vs 429 per tenant and endpoint
against the declared --policy.

--trace FILE replays a trace (see 'ratelab trace') at --speed, with its keys and each tenant's
order, instead of generating requests.

  ratelab gateway --listen 127.0.0.1:8080 --rate 50 --burst 100 &
  ratelab attack --url http://127.0.0.1:8080/ --rate 2000 --duration 10s --tenants 1000 \
      --zipf 0.99 --policy rate=50,burst=100 --out out/attack`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAttack(cmd, o, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.URL, "url", "", "base URL to attack; endpoints are appended as the first path segment (loopback only unless --allow-remote)")
	fl.BoolVar(&o.AllowRemote, "allow-remote", false, "allow a URL that is not on this machine")
	fl.Float64Var(&o.Rate, "rate", attack.DefaultRate, "offered rate, requests/s")
	fl.DurationVar(&o.Duration, "duration", attack.DefaultDuration, "length of the schedule")
	fl.StringVar(&o.Pacer, "pacer", "constant", "arrival schedule: constant or poisson")
	fl.IntVar(&o.Tenants, "tenants", attack.DefaultTenants, "number of tenants (API keys tenant-0 .. tenant-N-1; tenant-0 is the hottest)")
	fl.Float64Var(&o.Theta, "zipf", attack.DefaultTheta, "Zipf skew of the tenants (0.99 is YCSB's)")
	fl.Uint64Var(&o.Seed, "seed", attack.DefaultSeed, "seed of the request stream (the same seed gives the same requests as 'ratelab run')")
	fl.StringVar(&f.endpoints, "endpoints", attack.DefaultEndpoint, "endpoint mix, name[:weight],... e.g. search:3,read:1")
	fl.StringVar(&f.policy, "policy", "rate=100,burst=200", "the target's declared limit per tenant and endpoint, for overspend")
	fl.StringVar(&o.KeyHeader, "key-header", attack.DefaultKeyHeader, "header carrying the tenant's API key")
	fl.StringVar(&o.CostHeader, "cost-header", "", "header carrying each request's cost (needed to replay traces with costs other than 1)")
	fl.StringVar(&o.TimeHeader, "time-header", "", "header carrying each request's trace time (Unix ms); overspend is then judged at that time")
	fl.Uint64Var(&o.Workers, "workers", attack.DefaultWorkers, "vegeta workers at the start")
	fl.Uint64Var(&o.MaxWorkers, "max-workers", attack.DefaultMaxWorkers, "most vegeta workers (requests in flight)")
	fl.DurationVar(&o.Timeout, "timeout", attack.DefaultTimeout, "timeout of one request")
	fl.StringVar(&f.trace, "trace", "", "replay this trace file instead of generating requests")
	fl.Float64Var(&o.Speed, "speed", 1, "replay speed factor for --trace (2 = twice as fast)")
	fl.BoolVar(&o.NoTenantOrder, "no-tenant-order", false, "with --trace: do not hold a tenant's request until its previous one is answered")
	fl.StringVar(&o.Out, "out", "", "run directory (default out/attack-<time>)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no live progress (a bar on a terminal, a line per second or every few seconds otherwise)")
	return cmd
}

func runAttack(cmd *cobra.Command, o attack.Options, f attackFlags) error {
	var err error
	if o.Policy, err = attack.ParsePolicy(f.policy); err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	if o.Endpoints, o.Weights, err = attack.ParseEndpoints(f.endpoints); err != nil {
		return fmt.Errorf("--endpoints: %w", err)
	}
	if f.trace != "" {
		if cmd.Flags().Changed("endpoints") || cmd.Flags().Changed("rate") || cmd.Flags().Changed("tenants") {
			return fmt.Errorf("--trace %s: the trace fixes the requests; drop --rate, --tenants and --endpoints (use --speed to replay faster)", f.trace)
		}
		if o.Trace, err = readTrace(f.trace); err != nil {
			return err
		}
	}
	if err := o.Validate(); err != nil {
		return err
	}
	o.Version = version
	live := newLiveProgress(cmd.ErrOrStderr(), o.Duration, f.quiet)
	o.Logf, o.OnInterval, o.OnProgress = live.logf, live.onInterval, live.onProgress
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	res, err := attack.Attack(ctx, o)
	live.close()
	if res == nil {
		return err
	}
	if err := reportRun(cmd.OutOrStdout(), res.Dir, res.Summary, err); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "  vegeta       vegeta report %s\n", filepath.Join(res.Dir, attack.ResultsFile))
	if res.Summary.Interrupted {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted; partial results in %s", res.Dir)}
	}
	return nil
}

// readTrace reads a whole trace file. A damaged file is refused: replaying part of a trace
// would not reproduce the recording (`ratelab trace info` shows what is readable).
func readTrace(path string) (*trace.Trace, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	defer fh.Close()
	t, err := trace.ReadAll(fh)
	if err != nil {
		n := 0
		if t != nil {
			n = len(t.Records)
		}
		return nil, fmt.Errorf("--trace %s: %w (%d records readable; see ratelab trace info)", path, err, n)
	}
	return t, nil
}
