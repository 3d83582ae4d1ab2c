package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ratelab/results/compare"
)

// Defaults of Options.
const (
	// DefaultScenario is the scenario both builds run: ci-smoke, 5 s at 1,000 decisions/s on a
	// local 3x1 cluster, light enough to measure the decision path rather than the runner.
	DefaultScenario = "ci-smoke"
	// DefaultRepeat is the runs per side. With 8 against 8 the U test reaches p < 0.01 when at
	// most about 9 of the 64 base/head pairs are out of order, and the whole gate (builds
	// included) stays within 5 minutes on 2 cores (results/studies/gate-power.md has the measurement).
	DefaultRepeat = 8
	// DefaultAgainstRepeat is the head's runs against a committed baseline (make perf-check's
	// PERF_REPEAT before the gate compared builds).
	DefaultAgainstRepeat = 6
	// DefaultWarmup is the runs before the measured ones, left out of the comparison: the first
	// run on a fresh cluster pays for loading the script and filling caches.
	DefaultWarmup = 1
	// DefaultAlpha is the gate's significance level: seven metrics are tested at once, and a
	// same-build false alarm must stay below 1 in 20 gates.
	DefaultAlpha = 0.01
	// DefaultMainBranch is the branch whose merge base with HEAD is the default base; when no
	// local branch has the name, origin/<name> is tried.
	DefaultMainBranch = "main"
	// DefaultOut is where the runs and the comparison go.
	DefaultOut = "out/perf-check"
)

// Mode says what a gate compares.
type Mode string

// Modes.
const (
	// Builds: base and head built here and run alternately on one cluster.
	Builds Mode = "builds"
	// Days: the head's runs against summaries committed on another day (Options.Against).
	Days Mode = "days"
)

// Metrics are the metrics the builds gate judges: decision latency p50 and p99 from the intended
// start, the achieved rate, the overspend, false-deny and error ratios, and the generator's CPU
// per decision (results/compare defines each).
var Metrics = []string{"p50_ms", "p99_ms", "achieved_rps", "overspend_ratio", "false_deny_ratio", "error_ratio", "generator_cpu_us"}

// Thresholds are the builds gate's thresholds: how far a significant change may go before it is
// a regression. Tight, because base and head share the machine's moment: what is left between
// two alternated sets of one build is a few percent (results/studies/gate-power.md has the measurements). The
// ratios keep results/compare's absolute defaults.
func Thresholds() map[string]compare.Threshold {
	return map[string]compare.Threshold{
		"p50_ms":           {Value: 0.05, Relative: true},
		"p99_ms":           {Value: 0.10, Relative: true},
		"achieved_rps":     {Value: 0.02, Relative: true},
		"generator_cpu_us": {Value: 0.03, Relative: true},
	}
}

// DaysThresholds are the thresholds of the committed-baseline gate (Options.Against), as make
// perf-check had them: widened until a busy day stopped failing the same build, so that a real
// regression smaller than the day-to-day noise passes.
func DaysThresholds() map[string]compare.Threshold {
	return map[string]compare.Threshold{
		"p50_ms":       {Value: 0.30, Relative: true},
		"p99_ms":       {Value: 0.50, Relative: true},
		"p999_ms":      {Value: 1.00, Relative: true},
		"achieved_rps": {Value: 0.05, Relative: true},
	}
}

// Options configure a gate. The zero value compares the working tree of "." with its merge base
// with main.
type Options struct {
	// Repo is the git checkout whose working tree is the head; default ".".
	Repo string
	// Base is the base revision (any git revision); default the merge base of HEAD with
	// DefaultMainBranch (or origin/main).
	Base string
	// Against is a directory of committed summaries (rep-*/summary.json) to compare the head's
	// runs with instead of building the base: a comparison of days, said so in the output.
	Against string
	// Scenario is a built-in name or a YAML file; both sides run the same text (the head's
	// built-in, written to Out/scenario.yaml). Default DefaultScenario. Its cluster must be local.
	Scenario string
	// Repeat is the measured runs per side; default DefaultRepeat (DefaultAgainstRepeat with
	// Against).
	Repeat int
	// Warmup is the unmeasured runs before them; default DefaultWarmup, -1 for none.
	Warmup int
	// Out is the directory of the runs and the comparison; default DefaultOut. It must not exist
	// or be empty.
	Out string
	// Go is the go command that builds the binaries; default "go".
	Go string
	// Alpha is the U test's significance level; default DefaultAlpha.
	Alpha float64
	// Thresholds override the mode's thresholds (Thresholds or DaysThresholds) by metric name.
	Thresholds map[string]compare.Threshold
	// HeadDelay, when set, delays every chunk of bytes to and from every primary by this much
	// during the head's runs only (so a round trip gains twice it): a regression of known size
	// injected without changing the build. It puts every node behind a latency proxy.
	HeadDelay time.Duration
	// Proxy puts every node behind a latency proxy even without HeadDelay (the comparison runs
	// of an experiment on the injected delay).
	Proxy bool
	// BaseBinary and HeadBinary are prebuilt ratelab binaries; a side with one is not built
	// (experiments run one build twice).
	BaseBinary, HeadBinary string
	// RunArgs are added to every `ratelab run` (e.g. --duration 3s).
	RunArgs []string
	// Logf receives progress lines; nil is silent.
	Logf func(format string, args ...any)
}

// Result is a finished gate.
type Result struct {
	Mode Mode
	// Base and Head describe the two sides: a revision with how it was chosen, or the baseline
	// directory.
	Base, Head string
	// Report is the comparison.
	Report *compare.Report
	// Order is the sides in the order their measured runs ran ("base", "head", ...).
	Order []string
	// SLOFailures lists the runs whose own SLO checks failed, as "head rep-03: p99_ms ...".
	// They are reported, not judged: the comparison judges the metrics.
	SLOFailures []string
	// Build, Runs and Total are the wall times of the builds, of the cluster and the runs, and
	// of the whole gate.
	Build, Runs, Total time.Duration
	// Out is the directory the runs and compare.md are in.
	Out string
}

// Regressed reports whether the gate fails: some metric regressed.
func (r *Result) Regressed() bool { return r.Report.Regressed() }

// withDefaults fills the zero fields and makes the paths absolute.
func (o Options) withDefaults() (Options, error) {
	if o.Repo == "" {
		o.Repo = "."
	}
	if o.Scenario == "" {
		o.Scenario = DefaultScenario
	}
	if o.Repeat == 0 {
		o.Repeat = DefaultRepeat
		if o.Against != "" {
			o.Repeat = DefaultAgainstRepeat
		}
	}
	switch {
	case o.Warmup == 0:
		o.Warmup = DefaultWarmup
	case o.Warmup < 0:
		o.Warmup = 0
	}
	if o.Out == "" {
		o.Out = DefaultOut
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	var err error
	for _, p := range []*string{&o.Repo, &o.Out, &o.Against, &o.BaseBinary, &o.HeadBinary} {
		if *p != "" && err == nil {
			*p, err = filepath.Abs(*p)
		}
	}
	return o, err
}

// validate reports every problem of o at once, each with the flag that sets it.
func (o Options) validate() error {
	var probs []string
	if o.Repeat < 2 {
		probs = append(probs, fmt.Sprintf("repeat = %d: want at least 2 runs per side (%d by default; the U test needs 5 per side to reach p < %g)", o.Repeat, DefaultRepeat, o.Alpha))
	}
	if o.Alpha <= 0 || o.Alpha >= 1 {
		probs = append(probs, fmt.Sprintf("alpha = %g: want 0 < alpha < 1, e.g. %g", o.Alpha, DefaultAlpha))
	}
	if o.HeadDelay < 0 {
		probs = append(probs, fmt.Sprintf("head-delay = %v: want >= 0 (0: no injected delay)", o.HeadDelay))
	}
	if o.Against != "" && o.Base != "" {
		probs = append(probs, fmt.Sprintf("base = %q with against = %q: either build the base or compare with a committed baseline; drop one", o.Base, o.Against))
	}
	if o.Against != "" && (o.HeadDelay > 0 || o.Proxy) {
		probs = append(probs, "head-delay with against: the committed baseline ran without the latency proxy, so the proxy itself would read as a regression; inject a delay only when building the base")
	}
	if entries, err := os.ReadDir(o.Out); err == nil && len(entries) > 0 {
		probs = append(probs, fmt.Sprintf("out = %s is not empty: remove it or choose another directory", o.Out))
	}
	if len(probs) > 0 {
		return errors.New("perf-check: " + strings.Join(probs, "; "))
	}
	return nil
}

// Run runs the gate: builds (unless prebuilt), the alternated runs on one local cluster (or the
// head's runs alone against Options.Against), the comparison, and Out/compare.md. A regression
// is a Result whose Regressed is true, not an error; an error means no verdict.
func Run(ctx context.Context, opts Options) (*Result, error) {
	start := time.Now()
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("perf-check: %w", err)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("perf-check: out = %s: %w", o.Out, err)
	}
	tmp, err := os.MkdirTemp("", "ratelab-perf-check-")
	if err != nil {
		return nil, fmt.Errorf("perf-check: %w", err)
	}
	defer os.RemoveAll(tmp)
	res := &Result{Mode: Builds, Out: o.Out}
	if o.Against != "" {
		res.Mode = Days
	}
	// The scenario first: a scenario the gate cannot run fails before minutes of builds.
	scenario, spec, err := scenarioFile(o)
	if err != nil {
		return nil, err
	}
	bins, err := buildSides(ctx, o, tmp, res)
	if err != nil {
		return nil, err
	}
	res.Build = time.Since(start)
	runStart := time.Now()
	if err := runSides(ctx, o, spec, scenario, bins, tmp, res); err != nil {
		return nil, err
	}
	res.Runs = time.Since(runStart)
	if res.Report, err = judge(o, res.Mode); err != nil {
		return nil, err
	}
	res.SLOFailures = sloFailures(res.Report, res.Mode)
	res.Total = time.Since(start)
	return res, writeMarkdownFile(res)
}

// judge compares the two sides' runs in Out (or Against with Out/head) with the mode's
// metrics and thresholds.
func judge(o Options, mode Mode) (*compare.Report, error) {
	basePath := filepath.Join(o.Out, SideBase)
	if mode == Days {
		basePath = o.Against
	}
	base, err := compare.Load(basePath)
	if err != nil {
		return nil, fmt.Errorf("perf-check: base runs: %w", err)
	}
	head, err := compare.Load(filepath.Join(o.Out, SideHead))
	if err != nil {
		return nil, fmt.Errorf("perf-check: head runs: %w", err)
	}
	return Compare(mode, base, head, o.Alpha, o.Thresholds)
}

// Compare judges head against base as the gate of mode does: the builds gate on Metrics with
// Thresholds, the days gate on every metric of results/compare with DaysThresholds; overrides
// replace a mode's threshold by metric name, and alpha 0 is DefaultAlpha.
func Compare(mode Mode, base, head *compare.Set, alpha float64, overrides map[string]compare.Threshold) (*compare.Report, error) {
	opts := compare.Options{Alpha: alpha, Thresholds: Thresholds(), Metrics: Metrics}
	if mode == Days {
		opts.Thresholds, opts.Metrics = DaysThresholds(), nil
	}
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
	}
	for k, v := range overrides {
		opts.Thresholds[k] = v
	}
	return compare.Compare(base, head, opts)
}
