package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"ratelab/scenarios"
	"ratelab/studies/simulate"
)

// simulateOptions are the flags of `ratelab simulate predict`.
type simulateOptions struct {
	cfg         simulate.Config
	calibration string
	serviceUs   float64
	serviceCV   float64
	serviceKind string
	clientMs    float64
	colocated   bool
	failover    bool
	fo          simulate.Failover
	output      *outputFlag
}

// newSimulateCmd is `ratelab simulate predict|calibrate|validate`: the queueing model, the
// measurement of its inputs and the judgement of its predictions.
func newSimulateCmd() *cobra.Command {
	cmd := newGroupCmd(&cobra.Command{
		Use:   "simulate",
		Short: "Discrete-event model of N primaries at rates this machine cannot run: predict, calibrate, validate",
	})
	cmd.AddCommand(newSimulatePredictCmd(), newSimulateCalibrateCmd(), newSimulateValidateCmd())
	return cmd
}

// newSimulatePredictCmd is `ratelab simulate predict`: the model at the flags' cluster and load.
func newSimulatePredictCmd() *cobra.Command {
	var o simulateOptions
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Predict per-primary utilisation, p50/p99 and a failover's overspend bound at rates this machine cannot run (1M-10M decisions/s)",
		Long: `Simulate --primaries single-threaded primaries (FIFO, service time from a calibration) under
open-loop Poisson traffic of --rate decisions/s, with Zipf tenants hashed to primaries by CRC16 slot,
optional leases, and optionally a failover of the busiest primary (or --failover-primary).
Prints per-primary utilisation, throughput, p50/p99, central calls/s and the failover's overspend
bound. The steady state is simulated for min(--horizon, --max-requests/--rate) seconds; the
failover phase simulates the failed primary alone (its arrivals are an independent Poisson stream)
through its whole outage. The service time and client time come from --calibration FILE
(written by 'ratelab simulate calibrate'), or --service-us/--service-cv/--client-ms, or defaults
(80,000 calls/s per primary; see docs/capacity.md).`,
		Example: "  ratelab simulate predict --primaries 30 --rate 5000000 --tenants 1000000 --zipf 0.99\n" +
			"  ratelab simulate predict --primaries 30 --rate 5000000 --lease 100 --failover --fail open",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd, o) },
	}
	o.addFlags(cmd)
	return cmd
}

// runSimulate simulates o.cfg with the calibration o names, its fields overridden by the flags
// cmd was given, and prints the result.
func runSimulate(cmd *cobra.Command, o simulateOptions) error {
	cal := simulate.DefaultCalibration()
	if o.calibration != "" {
		c, err := simulate.ReadCalibration(o.calibration)
		if err != nil {
			return err
		}
		cal = c
	}
	set := cmd.Flags().Changed
	if set("service-us") {
		cal.Service.MeanUs = o.serviceUs
	}
	if set("service-cv") {
		cal.Service.CV = o.serviceCV
	}
	if set("service-dist") {
		cal.Service.Kind = o.serviceKind
	}
	if set("client-ms") {
		cal.Client = simulate.ConstantMs(o.clientMs)
	}
	o.cfg.Service, o.cfg.Client, o.cfg.ClientCPUUs = cal.Service, cal.Client, cal.ClientCPUUs
	if o.colocated {
		if cal.Host == nil {
			return errors.New("--colocated needs a calibration with a saturation probe: run 'ratelab simulate calibrate --probe-rate 30000' and pass --calibration")
		}
		o.cfg.Host = cal.HostAt(o.cfg.Rate)
	}
	if o.failover {
		fo := o.fo
		o.cfg.Failover = &fo
	}
	res, err := simulate.Simulate(o.cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.output.value == outputJSON {
		return printJSON(out, res)
	}
	fmt.Fprintf(out, "calibration: %s\n", cal.Source)
	_, err = fmt.Fprint(out, res.Text())
	return err
}

// addFlags defines the flags of `ratelab simulate predict` on cmd.
func (o *simulateOptions) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&o.cfg.Primaries, "primaries", 3, "primaries (one per shard)")
	fl.Float64Var(&o.cfg.Rate, "rate", 100_000, "offered decisions per second (Poisson)")
	fl.IntVar(&o.cfg.Tenants, "tenants", 1_000_000, "tenants")
	fl.Float64Var(&o.cfg.Theta, "zipf", 0.99, "Zipf exponent (0: uniform)")
	fl.Int64Var(&o.cfg.Lease, "lease", 0, "lease size in tokens (0: central decisions)")
	fl.IntVar(&o.cfg.Gateways, "gateways", 8, "gateways holding leases")
	fl.DurationVar(&o.cfg.LeaseTTL, "lease-ttl", time.Second, "lease lifetime")
	fl.DurationVar(&o.cfg.Timeout, "decision-timeout", simulate.DefaultTimeout, "deadline of one limiter decision (the client's)")
	fl.DurationVar(&o.cfg.Horizon, "horizon", simulate.DefaultHorizon, "simulated time of the steady state (shortened to --max-requests/--rate)")
	fl.IntVar(&o.cfg.MaxRequests, "max-requests", simulate.DefaultMaxRequests, "bound on simulated arrivals in the steady state")
	fl.Uint64Var(&o.cfg.Seed, "seed", 1, "random seed")
	fl.StringVar(&o.calibration, "calibration", "", "calibration JSON from 'ratelab simulate calibrate'")
	fl.Float64Var(&o.serviceUs, "service-us", 0, "mean script time per call on a primary's thread, µs (overrides the calibration)")
	fl.Float64Var(&o.serviceCV, "service-cv", 0, "coefficient of variation of the service time")
	fl.StringVar(&o.serviceKind, "service-dist", "", "service distribution: lognormal, exponential or constant")
	fl.Float64Var(&o.clientMs, "client-ms", 0, "constant client-side time of each call's latency, ms")
	fl.BoolVar(&o.colocated, "colocated", false, "put the clients and the primaries on the calibrated machine's CPU (validation on one machine; off for a real cluster)")
	fl.IntVar(&o.cfg.MaxInflight, "max-inflight", 0, "drop arrivals beyond this many undecided decisions, as the generator does (0: no bound)")
	fl.BoolVar(&o.failover, "failover", false, "fail a primary and report the outage and overspend bound")
	fl.IntVar(&o.fo.Primary, "failover-primary", -1, "primary to fail (-1: the busiest)")
	fl.DurationVar(&o.fo.At, "failover-at", 500*time.Millisecond, "when it fails, from the start of the failover phase")
	fl.DurationVar(&o.fo.NodeTimeout, "node-timeout", time.Second, "cluster-node-timeout (failure detection)")
	fl.DurationVar(&o.fo.Election, "election", simulate.DefaultElection, "from detection to the replica serving")
	fl.DurationVar(&o.fo.ReplicationLag, "repl-lag", simulate.DefaultReplicationLag, "replication lag: debits in this window are lost")
	fl.StringVar(&o.fo.Fail, "fail", "error", "decisions on the dead primary: open, closed or error")
	o.fo.PolicyRate, o.fo.PolicyBurst = 100, 200
	policy := newPolicyFlag(&o.fo.PolicyRate, func() int64 { return int64(o.fo.PolicyBurst) }, func(b int64) { o.fo.PolicyBurst = float64(b) })
	fl.Var(policy, "policy", "each key's token bucket (rate tokens/s, burst tokens), to bound fail-open overspend")
	o.output = addOutputFlag(cmd, "json is the simulation's result", outputJSON)
}

// calibrateOptions are the flags of `ratelab simulate calibrate`.
type calibrateOptions struct {
	rate      float64
	probeRate float64
	duration  time.Duration
	file      string
	out       string
	output    *outputFlag
}

func newSimulateCalibrateCmd() *cobra.Command {
	var o calibrateOptions
	cmd := &cobra.Command{
		Use:   "calibrate [NAME|FILE]",
		Short: "Measure the model's inputs on one local primary and write them as JSON",
		Long: `Start a one-primary local cluster, run the scenario (default hot-tenant) at a low --rate and
derive the service time per call (the primary's main-thread CPU over the script calls, spread
from Redis's own EVALSHA p50/p99), the machine's scheduling gaps (the latency tail) and the
client time of latency (the body of the latencies minus the service time). With --probe-rate a
saturation probe follows (2 s far above capacity), then two gap runs as long as the first at 25%
and 35% of the probe's answered rate: the machine's capacity for the limiter's work, the marginal
CPU per decision, and the co-located host, whose scheduling gaps grow with the rate, for
'ratelab simulate predict --colocated'.
Writes --file for 'ratelab simulate predict --calibration'.`,
		Example: "  ratelab simulate calibrate --rate 1000 --duration 5s --file calibration.json\n" +
			"  ratelab simulate calibrate --rate 800 --probe-rate 30000 --file calibration.json --out out/calibration-runs",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runCalibrate(cmd, args, o) },
	}
	fl := cmd.Flags()
	fl.Float64Var(&o.rate, "rate", 1000, "offered rate of the calibration run, requests/s (low: no queueing)")
	fl.DurationVar(&o.duration, "duration", 5*time.Second, "length of the calibration run")
	fl.Float64Var(&o.probeRate, "probe-rate", 0, "also run a saturation probe at this rate (far above capacity) for the co-located model")
	fl.StringVar(&o.file, "file", "calibration.json", "`FILE` to write the calibration JSON to")
	fl.StringVar(&o.out, "out", "", "keep the calibration runs' directories in `DIR` (default a temp dir, removed); "+
		"a value ending in .json needs --file beside it (the calibration file is --file)")
	o.output = addOutputFlag(cmd, "json is the calibration as written to --file", outputJSON)
	return cmd
}

// checkCalibrateOut refuses an --out ending in .json without --file: --out names the directory
// of the calibration runs, and such a value is the calibration file's old spelling.
func checkCalibrateOut(cmd *cobra.Command, o calibrateOptions) error {
	set := cmd.Flags().Changed
	if set("out") && !set("file") && strings.HasSuffix(o.out, ".json") {
		return fmt.Errorf("--out %s: --out is the directory of the calibration runs; name the calibration file with --file %s", o.out, o.out)
	}
	return nil
}

// runCalibrate calibrates the model on the scenario args name (default hot-tenant) and writes
// the calibration to o.file.
func runCalibrate(cmd *cobra.Command, args []string, o calibrateOptions) error {
	if err := checkCalibrateOut(cmd, o); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	name := "hot-tenant"
	if len(args) == 1 {
		name = args[0]
	}
	spec, err := scenarios.Resolve(name)
	if err != nil {
		return err
	}
	if !spec.NeedsCluster() {
		return errors.New("calibrate: the scenario's limiter does not use Redis; pick one that does")
	}
	spec.Load.Rate = o.rate
	spec.Duration = scenarios.Duration(o.duration)
	if err := spec.Validate(); err != nil {
		return err
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	cal, sum, err := simulate.CalibrateLocal(ctx, spec, o.probeRate, o.out, func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) })
	if err != nil {
		return interruptedErr(ctx, err)
	}
	if err := simulate.WriteCalibration(o.file, cal); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if o.output.value == outputJSON {
		return printJSON(w, cal)
	}
	_, err = fmt.Fprintf(w, "%s\nservice %s mean %.1f µs cv %.2f; run p50 %s ms p99 %s ms at %.0f/s\n%s\n",
		cal.Source, cal.Service.Kind, cal.Service.MeanUs, cal.Service.CV, sum.LatencyMs.P50, sum.LatencyMs.P99, sum.Load.AchievedRPS, o.file)
	return err
}
