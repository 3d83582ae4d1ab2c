package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ratelab/cluster"
	livemetrics "ratelab/report/live"
	"ratelab/results"
	"ratelab/run/attack"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

type runOptions struct {
	duration    time.Duration
	rate        float64
	seed        uint64
	out         string
	cluster     string
	stateFile   string
	concurrency int
	maxInflight int
	limiter     string
	quiet       bool
	cpuProfile  string
	memProfile  string
	slo         []string
	repeat      int
	// External and docker clusters (see docs/clusters.md).
	passwordFile string
	tlsCA        string
	tlsCert      string
	tlsKey       string
	allowFaults  bool
	dockerImage  string
	// part is --part i/N (see docs/distributed.md).
	part partFlag
	// startAt is --start-at: the schedule's t=0, shared by the parts of one load.
	startAt startAtFlag
	// Traces and the decision clock (see docs/scenarios.md).
	recordTrace string
	trace       string
	speed       float64
	clock       string
	transport   string
	via         string
	// design and period are --design and --period, over a multi-region scenario's regions.
	design string
	period time.Duration
	// durability is --durability and durabilityTimeout --durability-timeout (durability.go).
	durability        string
	durabilityTimeout time.Duration
	audit             bool
	// policy is --policy, written into policyRate and policyBurst.
	policy          *policyFlag
	policyRate      float64
	policyBurst     int64
	decisionTimeout time.Duration
	output          *outputFlag
	// metrics is --metrics-listen, --metrics-push and --metrics-grace (report/live).
	metrics livemetrics.Config
	// stages is --stages, the ramp of the offered rate (scenarios.ParseStages).
	stages string
}

// clusterOptions copies the flags of external clusters, and --part, into run options. The
// password is read from --password-file or $RATELAB_REDIS_PASSWORD, never from a flag value.
func (o runOptions) clusterOptions(r *engine.Options) {
	r.Part = o.part.Part
	r.StartAt = o.startAt.at
	r.PasswordFile = o.passwordFile
	r.AllowFaults = o.allowFaults
	if o.tlsCA != "" || o.tlsCert != "" || o.tlsKey != "" {
		r.TLS = &cluster.TLSFiles{CAFile: o.tlsCA, CertFile: o.tlsCert, KeyFile: o.tlsKey}
	}
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run NAME|FILE",
		Short: "Run a scenario (built-in name or YAML file) and write its results and report",
		Long: `Run a scenario against a real Redis Cluster and write summary.json, timeseries.csv,
plots and report.html to out/<scenario>-<time>/ (or --out).

Ctrl-C stops the schedule, lets in-flight decisions finish, writes what was measured (marked
interrupted) and stops the local cluster; a second Ctrl-C exits at once.

--repeat N runs the scenario N times with the same seed, each repetition in OUT/rep-01 ...
OUT/rep-NN with its full outputs, for ` + "`ratelab compare`" + `. A local cluster is started once and
shared by the repetitions, unless the scenario has faults (a kill or a reshard changes the
cluster, and a latency fault needs proxies of its own): then each repetition starts its own, as a
single run does. An interrupted repetition keeps what it measured and no further one starts.

Exit codes: 0 completed, every SLO check passed and every fault carried out; 1 error; 3 an SLO
check failed (in any repetition); 4 a scheduled fault could not be carried out (in any
repetition; summary.json marks it failed, with the reason): the run did not test what the
scenario asked; 130 interrupted. Every file is written before the exit.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenario(cmd, args[0], o)
		},
	}
	o.addFlags(cmd)
	return cmd
}

func runScenario(cmd *cobra.Command, name string, o runOptions) error {
	spec, err := scenarios.Resolve(name)
	if err != nil {
		return err
	}
	if err := applyOverrides(cmd, spec, o); err != nil {
		return err
	}
	if o.repeat < 1 {
		return fmt.Errorf("--repeat %d: want 1 or more repetitions", o.repeat)
	}
	if err := checkStartAt(spec, o); err != nil {
		return err
	}
	if o.repeat > 1 {
		if o.output.value == outputMD {
			return errors.New("--output md with --repeat: each repetition writes its own report.md in OUT/rep-NN; use text or json")
		}
		if o.recordTrace != "" {
			return errors.New("--record-trace with --repeat: the repetitions share one schedule; record it from a single run")
		}
		if o.metrics.Enabled() {
			return errMetricsRepeat
		}
		return runRepeated(cmd, spec, o)
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	stopProfiles, err := startProfiles(o.cpuProfile, o.memProfile)
	if err != nil {
		return err
	}
	defer stopProfiles()

	live := newLiveProgress(cmd.ErrOrStderr(), time.Duration(spec.Duration), o.quiet)
	dir := metricsDir(o.metrics, o.out, spec.Name)
	lm, err := startMetrics(o.metrics, spec.Name, dir, live.logf)
	if err != nil {
		return err
	}
	opts := engine.Options{
		Out:        dir,
		Version:    version,
		StateFile:  o.stateFile,
		Logf:       live.logf,
		OnInterval: lm.TeeInterval(live.onInterval),
		OnProgress: lm.TeeProgress(live.onProgress),
		// A trace of each run; --repeat writes none (the repetitions share one schedule).
		RecordTrace: o.recordTrace,
	}
	if lm != nil {
		opts.OnHistogram = func(_ int, h *results.Histogram) { lm.ObserveHistogram(h) }
	}
	o.clusterOptions(&opts)
	res, err := runOne(ctx, spec, opts)
	live.close()
	stopProfiles()
	if res == nil {
		finishMetrics(cmd.Context(), lm, nil, live.logf)
		return err
	}
	// After the report: the grace period then keeps the final totals up while the user reads.
	defer finishMetrics(cmd.Context(), lm, res.Summary, live.logf)
	if err := reportRun(cmd.OutOrStdout(), o.output.value, res.Dir, res.Summary, err); err != nil {
		return err
	}
	return runVerdict(res.Dir, res.Summary)
}

// runOne runs spec once, in-process or, with via: http, through the gateway (attack.RunScenario:
// the scenarios package cannot import the attack package, which imports it).
func runOne(ctx context.Context, spec *scenarios.Spec, opts engine.Options) (*engine.Result, error) {
	if spec.Via == scenarios.ViaHTTP {
		return attack.RunScenario(ctx, spec, opts)
	}
	return engine.Run(ctx, spec, opts)
}

// interruptContext is cancelled by the first SIGINT/SIGTERM, which lets the run write what it
// measured. A second signal exits at once; local Redis nodes die with the process (Pdeathsig).
func interruptContext(parent context.Context) (context.Context, func()) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		fmt.Fprintln(os.Stderr, "ratelab: interrupted: finishing in-flight decisions and writing results (signal again to quit now)")
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "ratelab: second signal: exiting now")
		os.Exit(exitInterrupted)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}

// startProfiles starts the CPU profile and returns a func (safe to call twice) that stops it and
// writes the heap profile.
func startProfiles(cpu, mem string) (func(), error) {
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		cpuFile = f
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if cpuFile != nil {
				pprof.StopCPUProfile()
				cpuFile.Close()
			}
			if mem == "" {
				return
			}
			f, err := os.Create(mem)
			if err != nil {
				fmt.Fprintln(os.Stderr, "ratelab: --memprofile:", err)
				return
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				fmt.Fprintln(os.Stderr, "ratelab: --memprofile:", err)
			}
		})
	}, nil
}
