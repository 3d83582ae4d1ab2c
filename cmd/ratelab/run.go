package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"ratelab/report"
	"ratelab/report/progress"
	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/attack"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/engine"
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
	// Traces and the decision clock (see docs/scenarios.md).
	recordTrace string
	trace       string
	speed       float64
	clock       string
	via         string
}

// clusterOptions copies the flags of external clusters, and --part, into run options. The
// password is read from --password-file or $RATELAB_REDIS_PASSWORD, never from a flag value.
func (o runOptions) clusterOptions(r *engine.Options) {
	r.Part = o.part.Part
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

// addFlags defines the run flags on cmd: `run` and the trace record/replay commands share them.
func (o *runOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", 0, "override the scenario's duration (e.g. 10s)")
	f.Float64Var(&o.rate, "rate", 0, "override the offered rate, requests/s")
	f.Uint64Var(&o.seed, "seed", 0, "override the seed of the request stream")
	f.StringVar(&o.out, "out", "", "run directory (default out/<scenario>-<time>)")
	f.StringVar(&o.cluster, "cluster", "", "cluster provider: local (start redis-server nodes), running (the one from `ratelab cluster up`), "+
		"docker (containers) or an external cluster redis://[user@]host:port[,host:port...] (rediss:// for TLS); "+
		"its password comes from $"+cluster.PasswordEnv+" or --password-file, never from the URL")
	f.StringVar(&o.passwordFile, "password-file", "", "file whose first line is the external cluster's password (default $"+cluster.PasswordEnv+")")
	f.StringVar(&o.tlsCA, "tls-ca", "", "CA certificate (PEM) that signed the external cluster's certificates; implies TLS")
	f.StringVar(&o.tlsCert, "tls-cert", "", "client certificate (PEM) for an external cluster that requires one; implies TLS")
	f.StringVar(&o.tlsKey, "tls-key", "", "key (PEM) of --tls-cert")
	f.BoolVar(&o.allowFaults, "allow-faults", false, "let the scenario's cluster faults run against an external cluster (refused without it: the cluster may be shared)")
	f.StringVar(&o.dockerImage, "docker-image", "", "Redis image of --cluster docker (default the official Redis 7 image)")
	f.StringVar(&o.stateFile, "state", "", "state file of `ratelab cluster up` (with --cluster running)")
	f.IntVar(&o.concurrency, "concurrency", 0, "override load.concurrency (worker goroutines)")
	f.IntVar(&o.maxInflight, "max-inflight", 0, "override load.max_inflight")
	f.StringVar(&o.limiter, "limiter", "", "override limiter.kind: "+scenarios.LimiterKindChoices()+" (the window kinds need policy limit and window, two-tier also policy.quota)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no live progress (a bar on a terminal, a line per second or every few seconds otherwise)")
	f.StringArrayVar(&o.slo, "slo", nil, "add or override an SLO check, key=value ("+strings.Join(scenarios.SLOKeys(), ", ")+"); repeatable")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to FILE (go tool pprof)")
	f.StringVar(&o.memProfile, "memprofile", "", "write a heap profile at the end of the run to FILE")
	f.Var(&o.part, "part", "run part INDEX/COUNT of a load split between COUNT generators (tenant i goes to part i mod COUNT); merge the parts' directories with `ratelab merge`")
	f.IntVar(&o.repeat, "repeat", 1, "run the scenario N times (same seed) into OUT/rep-01 .. OUT/rep-NN, for `ratelab compare`")
	f.StringVar(&o.recordTrace, "record-trace", "", "write the run's schedule (every offered request: offset, tenant, endpoint, cost) to FILE as a trace")
	f.StringVar(&o.trace, "trace", "", "replay this trace file instead of the scenario's seeded schedule (sets duration, rate and tenants)")
	f.Float64Var(&o.speed, "speed", 1, "replay speed factor for --trace (2 = twice as fast)")
	f.StringVar(&o.clock, "clock", "", "override limiter.clock: gateway, redis or schedule (decision time = start + intended offset: replays reproduce a run exactly)")
	f.StringVar(&o.via, "via", "", "override via: process (in-process decisions) or http (through ratelab's gateway, driven by vegeta)")
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
	if o.repeat > 1 {
		if o.recordTrace != "" {
			return errors.New("--record-trace with --repeat: the repetitions share one schedule; record it from a single run")
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
	opts := engine.Options{
		Out:        o.out,
		Version:    version,
		StateFile:  o.stateFile,
		Logf:       live.logf,
		OnInterval: live.onInterval,
		OnProgress: live.onProgress,
		// A trace of each run; --repeat writes none (the repetitions share one schedule).
		RecordTrace: o.recordTrace,
	}
	o.clusterOptions(&opts)
	res, err := runOne(ctx, spec, opts)
	live.close()
	stopProfiles()
	if res == nil {
		return err
	}
	if err := reportRun(cmd.OutOrStdout(), res.Dir, res.Summary, err); err != nil {
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
		spec.Cluster.Provider, spec.Cluster.URL = scenarios.ClusterProvider(o.cluster), ""
		if strings.HasPrefix(o.cluster, "redis://") || strings.HasPrefix(o.cluster, "rediss://") {
			spec.Cluster.Provider, spec.Cluster.URL = "external", o.cluster
		}
		if spec.Cluster.Provider != "docker" {
			spec.Cluster.Image = ""
		}
	}
	if set("docker-image") {
		spec.Cluster.Image = o.dockerImage
	}
	if set("concurrency") {
		spec.Load.Concurrency = o.concurrency
	}
	if set("max-inflight") {
		spec.Load.MaxInflight = o.maxInflight
	}
	if set("limiter") {
		spec.Limiter.Kind = scenarios.LimiterKind(o.limiter)
	}
	if set("clock") {
		spec.Limiter.Clock = o.clock
	}
	if set("via") {
		spec.Via = o.via
	}
	// o.trace is --trace, or the argument of `trace replay`.
	if set("speed") && o.trace == "" && spec.Trace == nil {
		return fmt.Errorf("--speed %g: only a replay has a speed; add --trace FILE", o.speed)
	}
	if o.trace != "" {
		if set("rate") || set("duration") || set("seed") {
			return fmt.Errorf("--trace %s: the trace fixes the requests, their timing and the run's length; drop --rate, --duration and --seed (use --speed to replay faster)", o.trace)
		}
		spec.Trace = &scenarios.TraceCfg{File: o.trace, Speed: o.speed}
	} else if set("speed") {
		spec.Trace.Speed = o.speed
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

// repDir is the directory of repetition i (1-based) inside a repeated run's directory.
func repDir(out string, i int) string { return filepath.Join(out, fmt.Sprintf("rep-%02d", i)) }

// repeater is one `run --repeat`: where the repetitions go and the cluster they share.
type repeater struct {
	cmd       *cobra.Command
	spec      *scenarios.Spec
	o         runOptions
	out       string
	stateFile string
	shared    []string // the shared cluster's nodes; nil when every repetition starts its own
}

// runRepeated runs spec o.repeat times with the same seed, each repetition in OUT/rep-NN with
// its summary, timeseries, plots and report. A local cluster is started once for all of them
// unless the scenario's faults change or instrument the cluster.
func runRepeated(cmd *cobra.Command, spec *scenarios.Spec, o runOptions) (err error) {
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	stopProfiles, err := startProfiles(o.cpuProfile, o.memProfile)
	if err != nil {
		return err
	}
	defer stopProfiles()
	stderr, stdout := cmd.ErrOrStderr(), cmd.OutOrStdout()
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) }
	r := &repeater{cmd: cmd, spec: spec, o: o, out: o.out, stateFile: o.stateFile}
	if r.out == "" {
		r.out = filepath.Join("out", spec.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", r.out, err)
	}
	local := spec.NeedsCluster() && spec.Cluster.Provider == scenarios.ProviderLocal
	if local && len(spec.Faults) > 0 {
		logf("the scenario has faults: each repetition starts its own cluster, as a single run does")
	}
	if local && len(spec.Faults) == 0 {
		// One cluster owned by this process (its nodes die with it, even on a second Ctrl-C or a
		// crash); the repetitions attach to it through a state file, as to `ratelab cluster up`'s.
		cl, state, serr := startSharedCluster(ctx, spec, logf)
		if serr != nil {
			return serr
		}
		r.shared = cl.Addrs()
		defer func() {
			if cerr := cl.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("stopping the shared cluster: %w", cerr)
			}
			os.RemoveAll(filepath.Dir(state))
		}()
		spec.Cluster.Provider, r.stateFile = scenarios.ProviderRunning, state
	}
	var sums []*results.Summary
	for i := 1; i <= o.repeat && ctx.Err() == nil; i++ {
		s, rerr := r.repetition(ctx, i)
		if rerr != nil {
			return rerr
		}
		sums = append(sums, s)
		fmt.Fprintln(stdout, repLine(i, o.repeat, s))
	}
	fmt.Fprintf(stdout, "%d of %d repetitions in %s; compare with: ratelab compare BASE %s\n", len(sums), o.repeat, r.out, r.out)
	if ctx.Err() != nil || (len(sums) > 0 && sums[len(sums)-1].Interrupted) {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted after %d of %d repetitions; what ran is in %s", len(sums), o.repeat, r.out)}
	}
	return repeatVerdict(r.out, sums)
}

// repetition runs repetition i (1-based) into OUT/rep-NN with its report, on the shared cluster
// (emptied first) when there is one.
func (r *repeater) repetition(ctx context.Context, i int) (*results.Summary, error) {
	dir, n := repDir(r.out, i), r.o.repeat
	stderr := r.cmd.ErrOrStderr()
	if r.shared != nil {
		if err := flushCluster(ctx, r.shared); err != nil {
			return nil, fmt.Errorf("repetition %d of %d: emptying the shared cluster: %w", i, n, err)
		}
	}
	fmt.Fprintf(stderr, "ratelab: repetition %d of %d -> %s\n", i, n, dir)
	live := newLiveProgress(stderr, time.Duration(r.spec.Duration), r.o.quiet, progress.WithPrefix(fmt.Sprintf("rep %d/%d", i, n)))
	ropts := engine.Options{Out: dir, Version: version, StateFile: r.stateFile,
		Logf: live.logf, OnInterval: live.onInterval, OnProgress: live.onProgress}
	r.o.clusterOptions(&ropts)
	res, err := runOne(ctx, r.spec, ropts)
	live.close()
	if res == nil {
		return nil, fmt.Errorf("repetition %d of %d: %w (earlier repetitions are in %s)", i, n, err, r.out)
	}
	if r.shared != nil {
		// The repetitions ran on a local cluster; "running" is only how they reached it.
		res.Summary.Environment.Provider = string(scenarios.ProviderLocal)
		if werr := results.WriteSummary(filepath.Join(dir, results.SummaryFile), res.Summary); werr != nil && err == nil {
			err = werr
		}
	}
	if gerr := report.Generate(dir); gerr != nil && err == nil {
		err = fmt.Errorf("writing the report of %s: %w", dir, gerr)
	}
	if err != nil {
		return nil, fmt.Errorf("repetition %d of %d: %w (its data is in %s)", i, n, err, dir)
	}
	return res.Summary, nil
}

// repLine is one repetition's line of the repeated run's table.
func repLine(i, n int, s *results.Summary) string {
	verdict := "SLO pass"
	if !s.SLO.Pass {
		verdict = "SLO FAILED: " + failedChecks(s.SLO)
	}
	if f := failedFaults(s.Faults); f != "" {
		verdict = "FAULT FAILED: " + f + "; " + verdict
	}
	if s.Interrupted {
		verdict = "INTERRUPTED after " + strconv.FormatFloat(s.DurationS, 'f', 1, 64) + " s"
	}
	return fmt.Sprintf("rep %2d/%d  p50 %8s ms  p99 %8s ms  p99.9 %8s ms  achieved %8.0f/s  overspend %.2g  errors %d  %s",
		i, n, s.LatencyMs.P50, s.LatencyMs.P99, s.LatencyMs.P999, s.Load.AchievedRPS, s.Overspend.Ratio, s.Outcomes.Errors, verdict)
}

// startSharedCluster starts the local cluster spec describes, owned by this process, and records
// it in a state file in a temp dir for the repetitions to attach to.
func startSharedCluster(ctx context.Context, spec *scenarios.Spec, logf func(string, ...any)) (*cluster.Local, string, error) {
	logf("starting one local Redis Cluster for every repetition: %d primaries x %d replicas", spec.Cluster.Primaries, *spec.Cluster.Replicas)
	// The options openCluster in scenarios uses for a single run, so both measure the same cluster.
	cl, err := cluster.StartLocal(ctx, cluster.Options{
		Primaries: spec.Cluster.Primaries, Replicas: *spec.Cluster.Replicas,
		NodeTimeout: time.Duration(spec.Cluster.NodeTimeout), Logf: logf,
	})
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "ratelab-repeat-")
	if err == nil {
		state := filepath.Join(dir, "cluster.json")
		if err = cl.SaveState(state); err == nil {
			return cl, state, nil
		}
		os.RemoveAll(dir)
	}
	return nil, "", errors.Join(fmt.Errorf("recording the shared cluster: %w", err), cl.Close())
}

// flushCluster empties every primary of the shared cluster before a repetition, so that each
// starts from empty buckets as a run on a fresh cluster does: the overspend envelope assumes every
// bucket starts full, and the previous repetition's keys (same seed, same keys) outlive it by
// their TTL. Scripts stay cached: FLUSHALL does not touch the script cache.
func flushCluster(ctx context.Context, addrs []string) error {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.FlushAll(ctx).Err()
	})
}
