package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ratelab/report"
	"ratelab/results"
	"ratelab/scenarios"
)

// exitSLOFailed is the exit code of a run that completed but failed an SLO check.
const exitSLOFailed = 3

// failedChecks lists the failed SLO checks as "name limit (was value)".
func failedChecks(s results.SLO) string {
	var out []string
	for _, c := range s.Checks {
		if !c.Pass {
			out = append(out, fmt.Sprintf("%s %g (was %g)", c.Name, c.Limit, c.Value))
		}
	}
	return strings.Join(out, "; ")
}

// exitInterrupted is the exit code of a run stopped by a signal (after its results are written).
const exitInterrupted = 130

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
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run NAME|FILE",
		Short: "Run a scenario (built-in name or YAML file) and write its results and report",
		Long: `Run a scenario against a real Redis Cluster and write summary.json, timeseries.csv,
plots and report.html to out/<scenario>-<time>/ (or --out).

Ctrl-C stops the schedule, lets in-flight decisions finish, writes what was measured (marked
interrupted) and stops the local cluster; a second Ctrl-C exits at once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenario(cmd, args[0], o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", 0, "override the scenario's duration (e.g. 10s)")
	f.Float64Var(&o.rate, "rate", 0, "override the offered rate, requests/s")
	f.Uint64Var(&o.seed, "seed", 0, "override the seed of the request stream")
	f.StringVar(&o.out, "out", "", "run directory (default out/<scenario>-<time>)")
	f.StringVar(&o.cluster, "cluster", "", "cluster provider: local (start redis-server nodes) or running (the one from `ratelab cluster up`)")
	f.StringVar(&o.stateFile, "state", "", "state file of `ratelab cluster up` (with --cluster running)")
	f.IntVar(&o.concurrency, "concurrency", 0, "override load.concurrency (worker goroutines)")
	f.IntVar(&o.maxInflight, "max-inflight", 0, "override load.max_inflight")
	f.StringVar(&o.limiter, "limiter", "", "override limiter.kind: token-bucket, gcra, lease, memory or noop (the window kinds need a limit/window policy)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no per-second progress lines")
	f.StringArrayVar(&o.slo, "slo", nil, "add or override an SLO check, key=value (p99_ms, p999_ms, overspend_ratio, false_deny_ratio, error_ratio, achieved_ratio, recovered_s); repeatable")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to FILE (go tool pprof)")
	f.StringVar(&o.memProfile, "memprofile", "", "write a heap profile at the end of the run to FILE")
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
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	stopProfiles, err := startProfiles(o.cpuProfile, o.memProfile)
	if err != nil {
		return err
	}
	defer stopProfiles()

	stderr := cmd.ErrOrStderr()
	opts := scenarios.RunOptions{
		Out:       o.out,
		Version:   version,
		StateFile: o.stateFile,
		Logf:      func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) },
	}
	if !o.quiet {
		opts.OnInterval = func(iv results.Interval) {
			fmt.Fprintf(stderr, "  t=%3.0fs offered %7d sent %7d dropped %6d allowed %7d denied %7d errors %5d p99 %8.3f ms\n",
				iv.TS, iv.Offered, iv.Sent, iv.Dropped, iv.Allowed, iv.Denied, iv.Errors, iv.P99Ms)
		}
	}
	res, err := scenarios.Run(ctx, spec, opts)
	stopProfiles()
	if res == nil {
		return err
	}
	reportPath := filepath.Join(res.Dir, "report.html")
	if rerr := report.Generate(res.Dir); rerr != nil {
		reportPath = ""
		if err == nil {
			err = fmt.Errorf("writing the report: %w (the run's data is in %s)", rerr, res.Dir)
		}
	}
	if werr := report.WriteText(cmd.OutOrStdout(), res.Summary, reportPath); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if res.Summary.Interrupted {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted; partial results in %s", res.Dir)}
	}
	if !res.Summary.SLO.Pass {
		return &exitError{code: exitSLOFailed, err: fmt.Errorf("SLO failed: %s", failedChecks(res.Summary.SLO))}
	}
	return nil
}

// applyOverrides puts the flags the user set over the scenario and validates the result.
func applyOverrides(cmd *cobra.Command, spec *scenarios.Spec, o runOptions) error {
	set := cmd.Flags().Changed
	if set("duration") {
		spec.Duration = scenarios.Duration(o.duration)
	}
	if set("rate") {
		spec.Load.Rate = o.rate
	}
	if set("seed") {
		spec.Seed = o.seed
	}
	if set("cluster") {
		spec.Cluster.Provider = o.cluster
	}
	if set("concurrency") {
		spec.Load.Concurrency = o.concurrency
	}
	if set("max-inflight") {
		spec.Load.MaxInflight = o.maxInflight
	}
	if set("limiter") {
		spec.Limiter.Kind = o.limiter
	}
	for _, kv := range o.slo {
		if err := spec.SetSLO(kv); err != nil {
			return err
		}
	}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("scenario %s with flags: %w", spec.Name, err)
	}
	return nil
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
