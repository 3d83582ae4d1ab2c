package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"ratelab/cluster"
	"ratelab/scenarios"
	"ratelab/studies/capacity"
)

// Defaults of the held-out validation (HoldoutOptions).
const (
	DefaultHoldoutPrimaries = 3
	DefaultHoldoutRunLength = 3 * time.Second
	DefaultKneeStepLength   = 2 * time.Second
	DefaultHoldoutRepeats   = 3
	// KneeP99Ms and KneeAchieved are the knee's SLO: the knee is the highest offered rate whose
	// p99 (over the offered decisions, from their intended start) is at most KneeP99Ms with at
	// least KneeAchieved of the rate achieved.
	KneeP99Ms    = 25.0
	KneeAchieved = 0.99
)

// holdoutLevels are the p99 runs' rates as shares of the measured saturation of N primaries,
// and holdoutThetas the Zipf exponents of the node-share runs.
var (
	holdoutLevels = []float64{0.4, 0.6, 0.8}
	holdoutThetas = []float64{0.99, 1.2}
)

// HoldoutOptions shape HoldoutLocal. Zero fields take the defaults.
type HoldoutOptions struct {
	// Primaries is the size of the cluster the model predicts (default 3, at least 2).
	Primaries int
	// ProbeRate is the calibration probe's first rate, doubled until the machine cannot keep up
	// (default DefaultProbeRate).
	ProbeRate float64
	// RunLength is the calibration's gap runs' and the measured runs' length, StepLength each
	// knee step's (defaults DefaultHoldoutRunLength and DefaultKneeStepLength; whole seconds).
	RunLength, StepLength time.Duration
	// Repeats is the runs at each p99 level; the measured p99 is their median (default 3).
	Repeats int
	// Out keeps the runs' directories (default a temp dir, removed).
	Out string
	// Logf, when set, gets a line per run.
	Logf func(string, ...any)
}

func (o HoldoutOptions) withDefaults() HoldoutOptions {
	if o.Primaries == 0 {
		o.Primaries = DefaultHoldoutPrimaries
	}
	if o.ProbeRate <= 0 {
		o.ProbeRate = DefaultProbeRate
	}
	if o.RunLength == 0 {
		o.RunLength = DefaultHoldoutRunLength
	}
	if o.StepLength == 0 {
		o.StepLength = DefaultKneeStepLength
	}
	if o.Repeats == 0 {
		o.Repeats = DefaultHoldoutRepeats
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Validate names each bad option, by the flag of `ratelab simulate validate` that sets it, with
// its fix.
func (o HoldoutOptions) Validate() error {
	var errs []error
	if o.Primaries < 2 || o.Primaries > 16 {
		errs = append(errs, fmt.Errorf("--primaries %d: want 2 to 16 (the knee of 1 primary is measured anyway)", o.Primaries))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--run-length", o.RunLength}, {"--step-length", o.StepLength}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			errs = append(errs, fmt.Errorf("%s %v: want whole seconds, at least 1s (a run's rates are counted per second)", d.name, d.v))
		}
	}
	if o.Repeats < 1 || o.Repeats > 64 {
		errs = append(errs, fmt.Errorf("--repeats %d: want 1 to 64 runs per p99 level", o.Repeats))
	}
	return errors.Join(errs...)
}

// CalibrationRuns are the calibration's runs on one primary, the baselines' only input.
type CalibrationRuns struct {
	ProbeRPS         float64 `json:"probe_rps"`
	ProbeAnsweredRPS float64 `json:"probe_answered_rps"`
	LowRPS           float64 `json:"low_rps"`
	LowP99Ms         float64 `json:"low_p99_ms"`
	HighRPS          float64 `json:"high_rps"`
	HighP99Ms        float64 `json:"high_p99_ms"`
}

// Holdout is the model calibrated on one primary and judged on runs it never saw.
type Holdout struct {
	Primaries       int             `json:"primaries"`
	Calibration     Calibration     `json:"calibration"`
	CalibrationRuns CalibrationRuns `json:"calibration_runs"`
	Measured        HeldOut         `json:"measured"`
	Model           Estimates       `json:"model"`
	Baseline        Estimates       `json:"baseline"`
	// ModelHotUtilisation is the model's busiest primary's utilisation at the top p99 level.
	ModelHotUtilisation float64 `json:"model_hot_utilisation"`
	Checks              []Check `json:"checks"`
	// Validated counts the checks validated.
	Validated int     `json:"validated"`
	ElapsedS  float64 `json:"elapsed_s"`
}

// HoldoutLocal calibrates the co-located model on a one-primary local cluster (a saturation
// probe and two gap runs at DefaultLowShare and DefaultHighShare of its answer: calibrateLoad),
// then measures what it never saw: the knees of 1 and o.Primaries primaries (capacity.Sweep,
// each on a fresh cluster), and on a cluster of o.Primaries the p99 at holdoutLevels of that
// knee and each primary's share of the script calls under each of holdoutThetas. The model
// and a naive baseline from the calibration runs alone predict each, and judgeHoldout
// compares them with the measurement.
func HoldoutLocal(ctx context.Context, spec *scenarios.Spec, opts HoldoutOptions) (*Holdout, error) {
	o := opts.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	if !spec.NeedsCluster() {
		return nil, fmt.Errorf("validate: scenario %s: limiter.kind %s does not use Redis; pick one that does", spec.Name, spec.Limiter.Kind)
	}
	if d := spec.Tenants.Distribution; d != "" && d != scenarios.DistZipf {
		return nil, fmt.Errorf("validate: scenario %s: tenants.distribution %s: the model draws Zipf tenants; use distribution %s", spec.Name, d, scenarios.DistZipf)
	}
	began := time.Now()
	out := o.Out
	if out == "" {
		d, err := os.MkdirTemp("", "ratelab-holdout-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		out = d
	}
	h := &Holdout{Primaries: o.Primaries}
	var err error
	if h.Calibration, h.CalibrationRuns, err = holdoutCalibrate(ctx, spec, o, filepath.Join(out, "calibration")); err != nil {
		return nil, err
	}
	if err := measureKnees(ctx, spec, o, h.CalibrationRuns.ProbeAnsweredRPS, filepath.Join(out, "knees"), &h.Measured); err != nil {
		return nil, err
	}
	if err := measureCluster(ctx, spec, o, filepath.Join(out, "cluster"), &h.Measured); err != nil {
		return nil, err
	}
	if err := h.predict(spec, o); err != nil {
		return nil, err
	}
	h.Baseline = baselines(spec, o.Primaries, h.CalibrationRuns, h.Measured)
	h.Checks = judgeHoldout(o.Primaries, h.Measured, h.Model, h.Baseline)
	for _, c := range h.Checks {
		if c.Validated {
			h.Validated++
		}
	}
	h.ElapsedS = time.Since(began).Seconds()
	return h, nil
}

// onePrimary is spec on one primary without replicas.
func onePrimary(spec *scenarios.Spec, primaries int) scenarios.Spec {
	s := *spec
	none := 0
	s.Cluster.Primaries, s.Cluster.Replicas = primaries, &none
	return s
}

// holdoutCalibrate starts a one-primary local cluster and calibrates the co-located model on it:
// a saturation probe (doubled until the machine drops), then a low and a high gap run at
// DefaultLowShare and DefaultHighShare of its answer (calibrateLoad).
func holdoutCalibrate(ctx context.Context, spec *scenarios.Spec, o HoldoutOptions, out string) (Calibration, CalibrationRuns, error) {
	var cr CalibrationRuns
	cl, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Logf: o.Logf})
	if err != nil {
		return Calibration{}, cr, err
	}
	defer cl.Close()
	s := onePrimary(spec, 1)
	_, state, err := saveState(cl, out)
	if err != nil {
		return Calibration{}, cr, err
	}
	vr := &validationRuns{cl: cl, spec: &s, state: state, out: out, logf: o.Logf}
	vo := ValidateOptions{ProbeRate: o.ProbeRate, ProbeLength: time.Second, Logf: o.Logf}
	probe, err := vr.firstProbe(ctx, &vo)
	if err != nil {
		return Calibration{}, cr, err
	}
	cr.ProbeRPS, cr.ProbeAnsweredRPS = probe.sum.Load.OfferedRPS, probe.answered()
	low, err := vr.run(ctx, "low", math.Round(DefaultLowShare*cr.ProbeAnsweredRPS), o.RunLength)
	if err != nil {
		return Calibration{}, cr, err
	}
	high, err := vr.run(ctx, "high", math.Round(DefaultHighShare*cr.ProbeAnsweredRPS), o.RunLength)
	if err != nil {
		return Calibration{}, cr, err
	}
	cr.LowRPS, cr.LowP99Ms = low.sum.Load.OfferedRPS, low.sum.LatencyServedMs.P99
	cr.HighRPS, cr.HighP99Ms = high.sum.Load.OfferedRPS, high.sum.LatencyServedMs.P99
	cal, err := calibrateLoad([]measured{low}, []measured{high}, []measured{probe}, cr.ProbeRPS, modelOf(&s, 1))
	return cal, cr, err
}

// kneeSLO is the knee's SLO as a scenario's.
func kneeSLO() scenarios.SLO {
	p99, achieved := KneeP99Ms, KneeAchieved
	return scenarios.SLO{P99Ms: &p99, AchievedRatio: &achieved}
}

// measureKnees measures the knees of 1 and o.Primaries primaries with capacity.Sweep (a fresh
// local cluster each): geometric steps from a quarter of the calibration probe's answer,
// probe, doubling, then bisection to within 4%.
func measureKnees(ctx context.Context, spec *scenarios.Spec, o HoldoutOptions, probe float64, out string, m *HeldOut) error {
	s := onePrimary(spec, 1)
	s.SLO = kneeSLO()
	none := 0
	res, err := capacity.Sweep(ctx, &s, capacity.SweepOptions{
		Primaries: []int{1, o.Primaries}, Replicas: &none, StepDuration: o.StepLength, Out: out, Logf: o.Logf,
		Search: capacity.Search{Start: math.Round(probe / 4), Factor: 2, Max: math.Round(2 * float64(o.Primaries) * probe), Bisect: 4, Tolerance: 0.04},
	})
	if err != nil {
		return fmt.Errorf("validate: knees: %w", err)
	}
	for _, ser := range res.Series {
		knee := 0.0
		if ser.Knee != nil {
			knee = ser.Knee.Offered
		}
		if ser.Note != "" {
			m.KneeNotes = append(m.KneeNotes, fmt.Sprintf("%d primaries: %s", ser.Primaries, ser.Note))
		}
		if ser.Primaries == 1 {
			m.Knee1RPS = knee
			continue
		}
		m.KneeNRPS, m.SaturationRPS = knee, knee
		if knee == 0 {
			for _, st := range ser.Steps {
				m.SaturationRPS = math.Max(m.SaturationRPS, st.Achieved)
			}
			m.KneeNotes = append(m.KneeNotes, fmt.Sprintf("%d primaries: the p99 levels are shares of the highest rate a step achieved, %.0f/s", ser.Primaries, m.SaturationRPS))
		}
	}
	if !(m.SaturationRPS > 0) {
		return errors.New("validate: the knee sweep of the larger cluster achieved no decisions")
	}
	return nil
}

// baselines are the naive predictions from the calibration runs alone (and the slot map): equal
// node shares, the p99 on the gap runs' straight line, the probe's answer as the knee of one
// primary and n times it for n, and the primary holding the most tenants as the busiest.
func baselines(spec *scenarios.Spec, n int, cr CalibrationRuns, m HeldOut) Estimates {
	b := Estimates{Knee1RPS: cr.ProbeAnsweredRPS, KneeNRPS: float64(n) * cr.ProbeAnsweredRPS, Busiest: mostTenantsNode(spec.Tenants.Count, n)}
	for _, l := range m.Levels {
		b.P99Ms = append(b.P99Ms, linearP99(cr.LowRPS, cr.LowP99Ms, cr.HighRPS, cr.HighP99Ms, l.Rate))
	}
	for range m.Shares {
		b.Shares = append(b.Shares, equalShares(n))
	}
	return b
}
