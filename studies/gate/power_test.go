//go:build experiment

package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ratelab/results/compare"
)

// The experiment's knobs, from the environment (make gate-power sets none: the defaults are the
// measurement results/studies/gate-power.md shows).
const (
	envTrials      = "RATELAB_GATE_TRIALS"       // same-build trials per condition (default 20)
	envPowerTrials = "RATELAB_GATE_POWER_TRIALS" // trials per injected delay (default 10)
	envDelays      = "RATELAB_GATE_DELAYS"       // delays each way, comma-separated (default 10us,25us,100us)
	envConditions  = "RATELAB_GATE_CONDITIONS"   // of quiet,neighbour,power (default all three)
	envRepeat      = "RATELAB_GATE_REPEAT"       // runs per side (default DefaultRepeat)
	envOut         = "RATELAB_GATE_OUT"          // where trials.json, gate-power.md and the summaries go
)

// committedBaseline is today's committed-baseline gate's BASE, relative to this package.
const committedBaseline = "../../results/baselines/ci-smoke"

// trial is one gate measured: its condition, what it injected, both gates' verdicts on its runs
// and the medians of every metric of the builds gate.
type trial struct {
	Condition string  `json:"condition"` // quiet, neighbour or power
	DelayUs   float64 `json:"delay_us"`  // injected each way during the head's runs; 0: none
	Index     int     `json:"index"`
	// Builds and Days are the regressed metrics of the builds gate (base and head alternated)
	// and of the committed-baseline gate (the head's first DefaultAgainstRepeat runs against
	// results/baselines/ci-smoke) on the same runs.
	Builds []string `json:"builds"`
	Days   []string `json:"days"`
	// Loose is the same runs judged at looseAlpha, filled when the tables are drawn.
	Loose []string `json:"-"`
	// Medians are the builds gate's rows: metric -> [base median, head median, p].
	Medians map[string][3]float64 `json:"medians"`
	// Base and Head are each side's values per metric, in run order of the sorted sets.
	Base map[string][]float64 `json:"base"`
	Head map[string][]float64 `json:"head"`
	// Error is a gate that ended without a verdict (a run broke); such a trial counts in no
	// table but its own line.
	Error    string  `json:"error,omitempty"`
	Seconds  float64 `json:"seconds"`
	LoadAvg1 string  `json:"loadavg_1m_after"`
}

// TestGatePower measures the gate on this machine (make gate-power): how often it fails one build
// against itself (quiet, and with a neighbour burning one core), and how large a delay injected
// into the head's runs must be before it is caught in at least 90% of gates, per metric; the
// committed-baseline gate's verdict on the same runs beside it. The head is built once and run
// as both sides. It writes trials.json (every trial) and gate-power.md (the tables) to
// $RATELAB_GATE_OUT (default out/experiments/gate-power under the repository).
func TestGatePower(t *testing.T) {
	ctx := context.Background()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := envString(envOut, filepath.Join(repo, "out", "experiments", "gate-power"))
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ratelab")
	if err := goBuild(ctx, Options{Go: "go"}, repo, bin, "experiment"); err != nil {
		t.Fatal(err)
	}
	baseline, err := compare.Load(committedBaseline)
	if err != nil {
		t.Fatal(err)
	}
	e := &experiment{t: t, repo: repo, out: out, bin: bin, baseline: baseline, repeat: envInt(t, envRepeat, DefaultRepeat)}
	conds := envString(envConditions, "quiet,neighbour,power")
	trials, powerTrials := envInt(t, envTrials, 20), envInt(t, envPowerTrials, 10)
	var plan []series
	for _, cond := range strings.Split(conds, ",") {
		switch cond {
		case "quiet", "neighbour":
			plan = append(plan, series{cond: cond, n: trials})
		case "power":
			for _, d := range delaysFromEnv(t) {
				plan = append(plan, series{cond: cond, delay: d, n: powerTrials})
			}
		default:
			t.Fatalf("%s = %q: unknown condition %q; use some of quiet,neighbour,power", envConditions, conds, cond)
		}
	}
	// Round robin over the series, so that the machine's hours (other jobs come and go) fall on
	// every condition alike, and an interrupted experiment has trials of each.
	for i := 1; ; i++ {
		ran := false
		for _, s := range plan {
			if i <= s.n {
				e.trial(ctx, s, i)
				ran = true
			}
		}
		if !ran {
			break
		}
	}
	if err := e.write(); err != nil {
		t.Fatal(err)
	}
}

// experiment holds the trials measured so far.
type experiment struct {
	t        *testing.T
	repo     string
	out      string
	bin      string
	baseline *compare.Set
	repeat   int
	trials   []trial
}

// series is one condition's trials: same build (quiet, or with a neighbour burning a core) or
// a delay injected into the head's runs.
type series struct {
	cond  string
	delay time.Duration
	n     int
}

// trial runs trial i of s, with the neighbour around it for that condition, and writes every
// trial so far.
func (e *experiment) trial(ctx context.Context, s series, i int) {
	stop := func() {}
	if s.cond == "neighbour" {
		stop = startNeighbour(e.t)
	}
	tr, err := e.one(ctx, s.cond, s.delay, i)
	stop()
	if err != nil {
		tr = trial{Condition: s.cond, DelayUs: float64(s.delay) / 1e3, Index: i, Error: err.Error(), LoadAvg1: loadAvg()}
		e.t.Logf("%s delay %v trial %d/%d: no verdict: %v", s.cond, s.delay, i, s.n, err)
	}
	e.trials = append(e.trials, tr)
	e.t.Logf("%s delay %v trial %d/%d: builds gate %v, committed-baseline gate %v (%.0f s, load %s)",
		s.cond, s.delay, i, s.n, tr.Builds, tr.Days, tr.Seconds, tr.LoadAvg1)
	if err := e.write(); err != nil {
		e.t.Fatal(err)
	}
}

// one runs one gate and judges its runs both ways; it keeps only the runs' summaries.
func (e *experiment) one(ctx context.Context, cond string, delay time.Duration, i int) (trial, error) {
	dir := filepath.Join(e.out, "trials", fmt.Sprintf("%s-%s-%02d", cond, delay, i))
	if err := os.RemoveAll(dir); err != nil {
		return trial{}, err
	}
	start := time.Now()
	res, err := Run(ctx, Options{Repo: e.repo, Base: "HEAD", BaseBinary: e.bin, HeadBinary: e.bin, Out: dir,
		Repeat: e.repeat, HeadDelay: delay, Proxy: cond == "power"})
	if err != nil {
		return trial{}, err
	}
	tr := trial{Condition: cond, DelayUs: float64(delay) / 1e3, Index: i, Builds: res.Report.Regressions(),
		Medians: map[string][3]float64{}, Base: map[string][]float64{}, Head: map[string][]float64{},
		Seconds: time.Since(start).Seconds(), LoadAvg1: loadAvg()}
	for _, row := range res.Report.Rows {
		tr.Medians[row.Metric.Name] = [3]float64{jsonable(row.BaseMedian), jsonable(row.NewMedian), jsonable(row.P)}
		tr.Base[row.Metric.Name], tr.Head[row.Metric.Name] = jsonables(row.Base), jsonables(row.New)
	}
	head := *res.Report.New
	head.Runs = head.Runs[:min(len(head.Runs), DefaultAgainstRepeat)]
	days, err := Compare(Days, e.baseline, &head, 0, nil)
	if err != nil {
		return trial{}, err
	}
	tr.Days = days.Regressions()
	return tr, keepSummaries(dir)
}

// keepSummaries removes everything under dir but the summaries and compare.md: a trial's plots
// and reports are megabytes, and the summaries hold every figure the tables use.
func keepSummaries(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b := filepath.Base(p); b == "summary.json" || b == CompareFile {
			return nil
		}
		return os.Remove(p)
	})
}

// startNeighbour starts `yes > /dev/null`, one core kept busy, and returns its stop.
func startNeighbour(t *testing.T) func() {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("yes")
	cmd.Stdout = devnull
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the neighbour (yes > /dev/null): %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			devnull.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// write saves trials.json and gate-power.md.
func (e *experiment) write() error {
	b, err := json.MarshalIndent(e.trials, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.out, "trials.json"), b, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.out, "gate-power.md"), []byte(tables(e.trials, e.repeat)), 0o644)
}

// loadAvg is the 1-minute load average, "?" where it cannot be read.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s = %q: want a whole number >= 1", name, v)
	}
	return n
}

func delaysFromEnv(t *testing.T) []time.Duration {
	var out []time.Duration
	for _, s := range strings.Split(envString(envDelays, "10us,25us,100us"), ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			t.Fatalf("%s: %q is not a duration > 0 (e.g. 50us)", envDelays, s)
		}
		out = append(out, d)
	}
	return out
}

// jsonable maps a value JSON cannot hold: +Inf (a latency that is not measurable) to the
// largest float64, which ranks the same in the U test; NaN (a metric a run lacks) to -1.
func jsonable(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return math.MaxFloat64
	case math.IsNaN(v) || math.IsInf(v, -1):
		return -1
	}
	return v
}

func jsonables(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = jsonable(x)
	}
	return out
}
