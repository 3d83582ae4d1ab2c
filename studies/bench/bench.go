package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/results"
)

// Defaults of Options.
const (
	// DefaultOut is where README.md and raw.json go.
	DefaultOut = "results/bench"
	// DefaultSeconds is how long each central variant runs (closed loop), and the generator
	// and lease sections' scenario duration is derived from it.
	DefaultSeconds = 5 * time.Second
	// QuickSeconds replaces DefaultSeconds with Quick.
	QuickSeconds = time.Second
	// DefaultConns is the number of connections (redis-benchmark -c) and of coalescing pipelines
	// in flight to the primary.
	DefaultConns = 4
	// DefaultDepth is the pipeline depth (redis-benchmark -P) and the coalescing batch size.
	DefaultDepth = 64
	// DefaultLinger is the coalescing variant's linger (limiter.WithBatchLinger): the
	// transport's own default, so the bench measures what a scenario with transport: coalesce
	// runs. --linger 0 measures it without.
	DefaultLinger = limiter.DefaultBatchLinger
	// maxLinger bounds Options.Linger: beyond it the variant measures waiting, not batching.
	maxLinger = 10 * time.Millisecond
	// DefaultClientProcs is GOMAXPROCS while the central variants run: one, as redis-benchmark
	// is one thread. On 2 cores shared with Redis a client with GOMAXPROCS 2 also runs threads
	// that spin looking for work, and they take the core the single-threaded server needs: its
	// main thread is less busy and the ratio to the ceiling lower (docs/performance.md has the
	// figures; compare `ratelab bench --client-procs 2`).
	DefaultClientProcs = 1
	// DefaultRepeat is how many times every section runs.
	DefaultRepeat = 1
	// maxRepeat bounds Options.Repeat: each repetition is a full bench.
	maxRepeat = 20
	// DefaultGatewayConns is wrk's connections (-c) in section 6, the same for every variant:
	// as many requests in flight as the central section's callers (DefaultConns x
	// DefaultDepth). Closed-loop throughput is each server's maximum only when the load keeps
	// it busy, and a Redis-backed gateway holds each request for a pipeline round trip, so it
	// needs more in flight than a bare handler to reach its own (compare --gateway-conns 64).
	DefaultGatewayConns = DefaultConns * DefaultDepth
)

// Options configure one bench. The zero value is a full bench into DefaultOut.
type Options struct {
	// Out is the directory for README.md and raw.json (created). Default DefaultOut.
	Out string
	// Quick shortens every section to QuickSeconds for smoke tests; numbers are noisier.
	Quick bool
	// Seconds overrides the per-section duration (DefaultSeconds, QuickSeconds with Quick).
	Seconds time.Duration
	// Conns and Depth set the central comparison: Conns x Depth callers for every variant,
	// coalescing with Conns pipelines of up to Depth decisions, redis-benchmark -c Conns -P Depth.
	// Defaults DefaultConns, DefaultDepth.
	Conns, Depth int
	// Linger is the coalescing variant's limiter.WithBatchLinger, 0..10ms; nil means
	// DefaultLinger.
	Linger *time.Duration
	// ClientProcs is GOMAXPROCS during the central variants (default DefaultClientProcs; the
	// other sections keep the process's own). 0 means the default.
	ClientProcs int
	// Repeat is how many times every section runs (default DefaultRepeat); the table shows
	// each figure's median and range, and for each target in how many repetitions it was met.
	Repeat int
	// GatewayConns is wrk's connections in section 6 (default DefaultGatewayConns).
	GatewayConns int
	// Wrk is the wrk binary of section 6. Default "wrk" on PATH.
	Wrk string
	// Command is the command line that reproduces the run, written into README.md.
	Command string
	// Version is ratelab's version, recorded in raw.json.
	Version string
	// RedisBenchmark is the redis-benchmark binary. Default "redis-benchmark" on PATH.
	RedisBenchmark string
	// Logf receives progress; nil is silent.
	Logf func(format string, args ...any)
}

func (o *Options) defaults() error {
	if o.Out == "" {
		o.Out = DefaultOut
	}
	if o.Seconds == 0 {
		o.Seconds = DefaultSeconds
		if o.Quick {
			o.Seconds = QuickSeconds
		}
	}
	if o.Conns == 0 {
		o.Conns = DefaultConns
	}
	if o.Depth == 0 {
		o.Depth = DefaultDepth
	}
	if o.ClientProcs == 0 {
		o.ClientProcs = DefaultClientProcs
	}
	if o.Linger == nil {
		d := DefaultLinger
		o.Linger = &d
	}
	if o.RedisBenchmark == "" {
		o.RedisBenchmark = "redis-benchmark"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Repeat == 0 {
		o.Repeat = DefaultRepeat
	}
	if o.GatewayConns == 0 {
		o.GatewayConns = DefaultGatewayConns
	}
	if o.Wrk == "" {
		o.Wrk = "wrk"
	}
	var errs []error
	if o.Seconds < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("bench: seconds %v: must be >= 100ms (default %v)", o.Seconds, DefaultSeconds))
	}
	if o.Conns < 1 || o.Conns > 64 {
		errs = append(errs, fmt.Errorf("bench: conns %d: must be 1..64 (default %d)", o.Conns, DefaultConns))
	}
	if o.ClientProcs < 1 || o.ClientProcs > runtime.NumCPU() {
		errs = append(errs, fmt.Errorf("bench: client procs %d: must be 1..%d, the cores of this machine (default %d)", o.ClientProcs, runtime.NumCPU(), DefaultClientProcs))
	}
	if *o.Linger < 0 || *o.Linger > maxLinger {
		errs = append(errs, fmt.Errorf("bench: linger %v: must be 0..%v (default %v; 0 sends each batch as soon as a pipeline is free)", *o.Linger, maxLinger, DefaultLinger))
	}
	if o.Depth < 1 || o.Depth > 1024 {
		errs = append(errs, fmt.Errorf("bench: depth %d: must be 1..1024 (default %d)", o.Depth, DefaultDepth))
	}
	if o.Repeat < 1 || o.Repeat > maxRepeat {
		errs = append(errs, fmt.Errorf("bench: repeat %d: must be 1..%d (default %d)", o.Repeat, maxRepeat, DefaultRepeat))
	}
	if o.GatewayConns < 1 || o.GatewayConns > 1024 {
		errs = append(errs, fmt.Errorf("bench: gateway conns %d: must be 1..1024 (default %d)", o.GatewayConns, DefaultGatewayConns))
	}
	return errors.Join(errs...)
}

// Report is raw.json: every number of every repetition, with where it was measured, and the
// targets met.
type Report struct {
	Schema    string    `json:"schema"`
	Command   string    `json:"command"`
	StartedAt time.Time `json:"started_at"`
	Quick     bool      `json:"quick"`
	Machine   Machine   `json:"machine"`
	// Repetitions are the passes over every section, in the order they ran (Options.Repeat of
	// them); the JSON keeps the name "runs".
	Repetitions []Repetition `json:"runs"`
	// Goals say for each target in how many of the repetitions it was met.
	Goals    []Goal        `json:"goals"`
	Duration time.Duration `json:"duration_ns"`
}

// Repetition is one repetition of every section.
type Repetition struct {
	Generator Generator `json:"generator"`
	Memory    Memory    `json:"memory"`
	Central   []Central `json:"central"`
	OpenLoop  OpenLoop  `json:"open_loop"`
	Ceiling   Ceiling   `json:"ceiling"`
	Ratio     Ratio     `json:"ratio"`
	Lease     Lease     `json:"lease"`
	Gateway   Gateway   `json:"gateway"`
}

// SchemaReport is Report.Schema: v2 holds a list of repetitions where v1 held one repetition's sections.
const SchemaReport = "ratelab.bench/v2"

// Machine is where the numbers were measured.
type Machine struct {
	Cores        int    `json:"cores"`
	GOMAXPROCS   int    `json:"gomaxprocs"`
	CPU          string `json:"cpu"`
	OS           string `json:"os"`
	Go           string `json:"go"`
	Ratelab      string `json:"ratelab"`
	RedisVersion string `json:"redis_version"`
	Bench        string `json:"redis_benchmark"`
	Cluster      string `json:"cluster"`
}

// Generator is section 1.
type Generator struct {
	OfferedRPS      float64    `json:"offered_rps"`
	DecisionsPerSec float64    `json:"decisions_per_s"`
	Dropped         int64      `json:"dropped"`
	ScheduleLagP99  float64    `json:"schedule_lag_p99_ms"`
	LatencyP99Ms    results.Ms `json:"latency_p99_ms"`
}

// Memory is section 2.
type Memory struct {
	DecisionsPerSec   float64 `json:"decisions_per_s"`
	NsPerDecision     float64 `json:"ns_per_decision"`
	AllocsPerDecision float64 `json:"allocs_per_decision"`
	Keys              int     `json:"keys"`
}

// Central is one variant of section 3.
type Central struct {
	Mode    string `json:"mode"`
	Callers int    `json:"callers"`
	// GOMAXPROCS is the client's while the variant ran (Options.ClientProcs).
	GOMAXPROCS      int     `json:"gomaxprocs"`
	Decisions       int64   `json:"decisions"`
	Errors          int64   `json:"errors"`
	DecisionsPerSec float64 `json:"decisions_per_s"`
	P50Ms           float64 `json:"p50_ms"`
	P99Ms           float64 `json:"p99_ms"`
	// CPUPerDecisionUs is ratelab's own CPU time (user + system, every goroutine) per decision:
	// what the client costs, independent of how busy the machine's other processes keep it.
	CPUPerDecisionUs float64 `json:"cpu_us_per_decision"`
	// PerPipeline is the average decisions per pipeline and LingerUs the linger it ran with
	// (coalescing only).
	PerPipeline float64 `json:"decisions_per_pipeline,omitempty"`
	LingerUs    float64 `json:"linger_us,omitempty"`
	// RedisBusy and RedisUsPerCall are the target primary's main thread while the variant ran:
	// its CPU time over the wall time (1 = the server is the limit) and per script call.
	RedisBusy      float64 `json:"redis_main_thread_busy"`
	RedisUsPerCall float64 `json:"redis_cpu_us_per_call"`
}

// OpenLoop is section 3's open-loop row (measureOpenLoop): hot-tenant at 100,000 offered on the
// bench's 3x1 cluster.
type OpenLoop struct {
	OfferedRPS  float64    `json:"offered_rps"`
	AchievedRPS float64    `json:"achieved_rps"`
	P50Ms       results.Ms `json:"p50_ms"`
	P99Ms       results.Ms `json:"p99_ms"`
	// CPU is the run's cpu.us_per_decision; nil where the run could not read its CPU.
	CPU *results.CPUPerDecision `json:"cpu_us_per_decision,omitempty"`
	// CallsPerRead is the primaries' mean script calls per read (cpu.nodes[].script_calls_per_read).
	CallsPerRead float64 `json:"script_calls_per_read"`
}

// Ceiling is section 4.
type Ceiling struct {
	Command        string  `json:"command"`
	Conns          int     `json:"conns"`
	Depth          int     `json:"depth"`
	Requests       int     `json:"requests"`
	RequestsPerSec float64 `json:"requests_per_s"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	// Runs are the rates of the run before and the run after the central variants; the
	// higher one is RequestsPerSec.
	Runs []float64 `json:"runs_requests_per_s"`
	// RedisBusy and RedisUsPerCall are Central's, over both runs: the central variants span
	// the time between them, and the faster run alone would be the machine's faster moment,
	// whose CPU per call is lower whatever the traffic.
	RedisBusy      float64 `json:"redis_main_thread_busy"`
	RedisUsPerCall float64 `json:"redis_cpu_us_per_call"`
	// use is what the main thread did during this run.
	use serverUse
}

// Ratio compares the best central variant with the ceiling.
type Ratio struct {
	Best  string  `json:"best_mode"`
	Value float64 `json:"value"`
}

// Lease is section 5.
type Lease struct {
	OfferedRPS   float64    `json:"offered_rps"`
	AchievedRPS  float64    `json:"achieved_rps"`
	Achieved     float64    `json:"achieved_ratio"`
	Dropped      int64      `json:"dropped"`
	Errors       int64      `json:"errors"`
	P50Ms        results.Ms `json:"p50_ms"`
	P99Ms        results.Ms `json:"p99_ms"`
	CentralOpsPS float64    `json:"central_ops_per_s"`
}

// Measure measures the six sections opts.Repeat times on one local cluster (3 primaries x 1
// replica, as the built-in scenarios use) and writes README.md and raw.json into opts.Out. A
// section that fails stops the run: the numbers of a bench are only useful together.
func Measure(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	started := time.Now()
	rep := newReport(opts, started)
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("bench: output directory: %w", err)
	}
	tmp, err := os.MkdirTemp("", "ratelab-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: temp directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	opts.Logf("bench: starting a local Redis Cluster (3 primaries x 1 replica)")
	cl, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 3, Replicas: 1, Logf: func(string, ...any) {}})
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer cl.Close()
	rep.Machine.RedisVersion = cl.RedisVersion()
	rep.Machine.Bench = benchVersion(ctx, opts.RedisBenchmark)
	rep.Machine.Cluster = "local 3x1"
	state := filepath.Join(tmp, "cluster.json")
	if err := cl.SaveState(state); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	for i := range opts.Repeat {
		r, err := measureRepetition(ctx, opts, cl.Addrs(), state, filepath.Join(tmp, fmt.Sprint("run-", i+1)), i)
		if err != nil {
			return nil, err
		}
		rep.Repetitions = append(rep.Repetitions, r)
	}
	rep.Goals = goalsMet(rep.Repetitions)
	rep.Duration = time.Since(started)
	if err := write(opts.Out, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// measureRepetition is repetition i (from 0) of the six sections on the cluster at addrs, whose
// state file is state, with dir for the scenarios' run directories.
func measureRepetition(ctx context.Context, opts Options, addrs []string, state, dir string, i int) (Repetition, error) {
	var (
		run Repetition
		err error
	)
	if opts.Repeat > 1 {
		opts.Logf("bench: repetition %d of %d", i+1, opts.Repeat)
	}
	opts.Logf("bench 1/6: generator with a no-op limiter")
	if run.Generator, err = measureGenerator(ctx, opts, filepath.Join(dir, "generator")); err != nil {
		return Repetition{}, err
	}
	opts.Logf("bench 2/6: in-memory token bucket")
	run.Memory = measureMemory(opts)
	if err := measureAgainstCeiling(ctx, opts, addrs, &run); err != nil {
		return Repetition{}, err
	}
	opts.Logf("bench 3/6: open loop, hot-tenant at 100,000 offered decisions/s over 3 primaries")
	if run.OpenLoop, err = measureOpenLoop(ctx, opts, state, filepath.Join(dir, "open-loop")); err != nil {
		return Repetition{}, err
	}
	opts.Logf("bench 5/6: lease mode at 100,000 offered decisions/s")
	if run.Lease, err = measureLease(ctx, opts, state, filepath.Join(dir, "lease")); err != nil {
		return Repetition{}, err
	}
	opts.Logf("bench 6/6: HTTP gateway under wrk, %d connections: bare net/http, in-memory, Redis coalescing", opts.GatewayConns)
	if run.Gateway, err = measureGateway(ctx, opts, addrs, filepath.Join(dir, "gateway")); err != nil {
		return Repetition{}, err
	}
	return run, nil
}

// newReport is a report of a run started at started, with the machine it runs on.
func newReport(opts Options, started time.Time) *Report {
	return &Report{
		Schema: SchemaReport, Command: opts.Command, StartedAt: started.UTC(), Quick: opts.Quick,
		Machine: Machine{
			Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel(),
			OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), Ratelab: opts.Version,
		},
	}
}

// measureAgainstCeiling is sections 3 and 4 on the cluster at addrs: the central variants, and
// the redis-benchmark ceiling run before and after them, the higher rate counting (a machine busy
// with other work during one of them lowers the ceiling, which would flatter the ratio). It sets
// rep's Central, Ceiling and Ratio.
func measureAgainstCeiling(ctx context.Context, opts Options, addrs []string, rep *Repetition) error {
	target, err := newTarget(ctx, addrs)
	if err != nil {
		return err
	}
	opts.Logf("bench 3/6: central decisions (plain, autopipeline, coalescing), %d callers each", opts.Conns*opts.Depth)
	opts.Logf("bench 4/6: redis-benchmark ceiling on %s (before the central variants)", target.addr)
	before, err := measureCeiling(ctx, opts, target)
	if err != nil {
		return err
	}
	if rep.Central, err = measureCentral(ctx, opts, target); err != nil {
		return err
	}
	opts.Logf("bench 4/6: redis-benchmark ceiling on %s (after the central variants)", target.addr)
	after, err := measureCeiling(ctx, opts, target)
	if err != nil {
		return err
	}
	rep.Ceiling = before
	if after.RequestsPerSec > before.RequestsPerSec {
		rep.Ceiling = after
	}
	rep.Ceiling.Runs = []float64{before.RequestsPerSec, after.RequestsPerSec}
	both := before.use
	both.add(after.use)
	rep.Ceiling.RedisBusy, rep.Ceiling.RedisUsPerCall = both.busy(), both.usPerCall()
	for _, c := range rep.Central {
		if r := c.DecisionsPerSec / rep.Ceiling.RequestsPerSec; r > rep.Ratio.Value {
			rep.Ratio = Ratio{Best: c.Mode, Value: r}
		}
	}
	return nil
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "" where there is none.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
