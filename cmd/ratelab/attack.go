package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"ratelab/limiter"
	livemetrics "ratelab/report/live"
	"ratelab/results"
	"ratelab/run/attack"
	"ratelab/scenarios"
	"ratelab/workload/trace"
)

// attackFlags are `ratelab attack`'s flags that need parsing before they fit attack.Options.
type attackFlags struct {
	endpoints string
	trace     string
	quiet     bool
	slo       []string
	output    *outputFlag
	req       requestFlags
	metrics   livemetrics.Config
	stages    string
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

Real APIs: --method, -H 'Name: value' (repeatable), --body or --body-file, --key-header with
--key-format 'Bearer {key}' and --keys-file (one real key per line) shape the requests; https
URLs verify against the system's roots plus --ca FILE (--insecure skips verification). The
values of Authorization-like headers and the keys are never printed or written. Every answer's
Retry-After and RateLimit headers are checked against the answers that follow (header honesty,
see docs/attack.md); --policy limit=N,window=W declares a sliding window instead of a bucket.

--trace FILE replays a trace (see 'ratelab trace') at --speed, with its keys and each tenant's
order, instead of generating requests.

--slo key=value checks the attack's summary as 'ratelab run --slo' checks a run's (same keys);
the verdict is written into summary.json, and a failed check exits 3.

  ratelab gateway --listen 127.0.0.1:8080 --policy rate=50,burst=100 &
  ratelab attack --url http://127.0.0.1:8080/ --rate 2000 --duration 10s --tenants 1000 \
      --zipf 0.99 --policy rate=50,burst=100 --slo p99_ms=50 --out out/attack`,
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
	o.Policy = limiter.BucketPolicy{Rate: 100, Burst: 200}
	fl.Var(newPolicyFlag(&o.Policy.Rate, func() int64 { return o.Policy.Burst }, func(b int64) { o.Policy.Burst = b }).withWindow(&o.Window),
		"policy", "the target's declared limit per tenant and endpoint, for overspend and header honesty: a token bucket rate=R,burst=B (tokens/s, tokens) or a sliding window limit=N,window=W (requests, duration)")
	fl.StringVar(&o.KeyHeader, "key-header", attack.DefaultKeyHeader, "header carrying the tenant's API key")
	fl.StringVar(&o.CostHeader, "cost-header", "", "header carrying each request's cost (needed to replay traces with costs other than 1)")
	fl.StringVar(&o.TimeHeader, "time-header", "", "header carrying each request's trace time (Unix ms); overspend is then judged at that time")
	fl.Uint64Var(&o.Workers, "concurrency", attack.DefaultWorkers, "vegeta workers at the start")
	fl.Uint64Var(&o.MaxWorkers, "max-inflight", attack.DefaultMaxWorkers, "most requests in flight (vegeta's most workers)")
	fl.DurationVar(&o.Timeout, "request-timeout", attack.DefaultTimeout, "deadline of one HTTP request")
	fl.StringArrayVar(&f.slo, "slo", nil, "SLO check on the attack's summary, key=value ("+strings.Join(scenarios.SLOKeys(), ", ")+"); repeatable; a failed check exits 3")
	fl.StringVar(&f.trace, "trace", "", "replay this trace file instead of generating requests")
	fl.Float64Var(&o.Speed, "speed", 1, "replay speed factor for --trace (2 = twice as fast)")
	fl.BoolVar(&o.NoTenantOrder, "no-tenant-order", false, "with --trace: do not hold a tenant's request until its previous one is answered")
	fl.StringVar(&o.Out, "out", "", "run `DIR` (default out/attack-<time>)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no live progress (a bar on a terminal, a line per second or every few seconds otherwise)")
	fl.StringVar(&f.stages, "stages", "", "ramp the offered rate from --rate (default 0 with stages): TO@OVER ramps to TO requests/s over OVER, hold@D keeps it, comma-separated, e.g. 500@10s,5000@20s,hold@10s; the attack lasts their total unless --duration")
	addMetricsFlags(cmd, &f.metrics)
	f.req.register(cmd, &o)
	f.output = addOutputFlag(cmd, runOutputHelp, outputJSON, outputMD)
	return cmd
}

func runAttack(cmd *cobra.Command, o attack.Options, f attackFlags) error {
	var err error
	if o.Endpoints, o.Weights, err = attack.ParseEndpoints(f.endpoints); err != nil {
		return fmt.Errorf("--endpoints: %w", err)
	}
	if o.SLO, err = attack.ParseSLO(f.slo); err != nil {
		return err
	}
	if f.trace != "" {
		if cmd.Flags().Changed("endpoints") || cmd.Flags().Changed("rate") || cmd.Flags().Changed("tenants") {
			return fmt.Errorf("--trace %s: the trace fixes the requests; drop --rate, --tenants and --endpoints (use --speed to replay faster)", f.trace)
		}
		if o.Trace, err = readTrace(f.trace); err != nil {
			return err
		}
	}
	if err := f.req.apply(cmd, &o); err != nil {
		return err
	}
	if err := applyAttackStages(cmd, &o, f); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	warnInsecure(cmd.ErrOrStderr(), o)
	o.Version = version
	live := newLiveProgress(cmd.ErrOrStderr(), o.Duration, f.quiet)
	name := "attack"
	if o.Trace != nil {
		name = "replay"
	}
	o.Out = metricsDir(f.metrics, o.Out, name)
	lm, err := startMetrics(f.metrics, name, o.Out, live.logf)
	if err != nil {
		return err
	}
	o.Logf, o.OnInterval, o.OnProgress = live.logf, lm.TeeInterval(live.onInterval), lm.TeeProgress(live.onProgress)
	if lm != nil {
		o.OnHistogram = func(_ int, h *results.Histogram) { lm.ObserveHistogram(h) }
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	res, err := attack.Attack(ctx, o)
	live.close()
	if res == nil {
		finishMetrics(cmd.Context(), lm, nil, live.logf)
		return err
	}
	defer finishMetrics(cmd.Context(), lm, res.Summary, live.logf)
	if err := reportRun(cmd.OutOrStdout(), f.output.value, res.Dir, res.Summary, err); err != nil {
		return err
	}
	if f.output.value == outputText {
		printHonesty(cmd.OutOrStdout(), res.Summary.HeaderHonesty)
		fmt.Fprintf(cmd.OutOrStdout(), "  vegeta       vegeta report %s\n", filepath.Join(res.Dir, attack.ResultsFile))
	}
	return runVerdict(res.Dir, res.Summary)
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
			n = len(t.Requests)
		}
		return nil, fmt.Errorf("--trace %s: %w (%d records readable; see ratelab trace info)", path, err, n)
	}
	return t, nil
}

// applyAttackStages turns --stages into the attack's ramp: it starts from --rate when given (else
// 0, as k6's ramping arrival rate does) and lasts the stages' total unless --duration is given.
func applyAttackStages(cmd *cobra.Command, o *attack.Options, f attackFlags) error {
	if !cmd.Flags().Changed("stages") {
		return nil
	}
	if f.trace != "" {
		return fmt.Errorf("--stages %s with --trace %s: the trace fixes the requests' timing; drop one", f.stages, f.trace)
	}
	st, err := scenarios.ParseStages(f.stages)
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("rate") {
		o.Rate = 0
	}
	if !cmd.Flags().Changed("duration") {
		o.Duration = 0
	}
	o.Stages = scenarios.WorkloadStages(o.Rate, st)
	return nil
}
