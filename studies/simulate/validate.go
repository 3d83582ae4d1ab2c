package simulate

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// ValidateScenario is the validation's default scenario: 1,000 Zipf-0.99 tenants, 32 workers,
// at most 512 in flight, one primary; rate and duration are set per run.
const ValidateScenario = `
name: simulate-validate
duration: 2s
tenants: {count: 1000, theta: 0.99}
load: {rate: 1000, pacer: poisson, concurrency: 32, max_inflight: 512}
policy: {rate: 100, burst: 200}
cluster: {provider: running, primaries: 1, replicas: 0}
`

// ValidateLocal starts a one-primary local cluster, runs ValidateCoLocated on it and stops it.
func ValidateLocal(ctx context.Context, spec *scenarios.Spec, opts ValidateOptions) (*Validation, error) {
	if err := checkLaw(opts.HostLaw); err != nil {
		return nil, fmt.Errorf("validate: --host-law: %w", err) // before any node starts
	}
	cl, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	run := *spec
	run.Cluster.Primaries = 1
	none := 0
	run.Cluster.Replicas = &none
	return ValidateCoLocated(ctx, cl, &run, opts)
}

// Defaults of a validation (ValidateOptions).
const (
	DefaultValidateRounds = 5
	DefaultValidateShare  = 0.3
	DefaultProbeRate      = 30_000
	// DefaultLowShare and DefaultHighShare are the gap runs' rates as shares of the machine's
	// capacity (a saturation probe's): the two rates the host's share of time off is solved at
	// (HostLoad), on either side of the default measured share, so the host's term, the one part
	// of the model a cluster of its own machines does not have, is interpolated, and what the
	// validation checks at the measured rate is the rest of the model. Carried from two gap runs
	// below the measured share the law reads the p99 high, and a bracket much wider than this one
	// reaches past a knee the model does not have (docs/capacity.md, "Validation", has the
	// figures and TestGapRunPairs the side-by-side comparison).
	DefaultLowShare  = 0.25
	DefaultHighShare = 0.35
)

// ValidateOptions shape ValidateCoLocated. Zero fields take the defaults.
type ValidateOptions struct {
	// Rounds of gap runs, measured run and probe (default 5).
	Rounds int
	// ProbeRate is the saturation probes' rate (default 30,000/s: far above what one machine
	// carries in central mode; doubled until the first probe saturates).
	ProbeRate float64
	// Share is the measured rate as a share of the first probe's capacity (default 0.3), or Rate
	// the measured rate itself when > 0.
	Share, Rate float64
	// LowShare and HighShare are the gap runs' rates as shares of the first probe's capacity
	// (defaults DefaultLowShare and DefaultHighShare).
	LowShare, HighShare float64
	// HostLaw is the shape the host's share of time off follows from the gap runs to the
	// measured rate (HostLoad.Law; default DefaultHostLaw).
	HostLaw string
	// ProbeLength is the probes' length and RunLength the measured and gap runs' (defaults 1 s
	// and 4 s; whole seconds: a run's rates are counted over whole seconds). A run's p99 is set
	// by the few scheduling gaps it catches, so a run must be long enough to catch dozens.
	ProbeLength, RunLength time.Duration
	// Out keeps the runs' directories (default a temp dir, removed).
	Out string
	// Logf, when set, gets a line per run.
	Logf func(string, ...any)
}

func (o ValidateOptions) withDefaults() ValidateOptions {
	o.Rounds = max(o.Rounds, 0)
	if o.Rounds == 0 {
		o.Rounds = DefaultValidateRounds
	}
	if o.ProbeRate <= 0 {
		o.ProbeRate = DefaultProbeRate
	}
	if o.Share <= 0 {
		o.Share = DefaultValidateShare
	}
	if o.LowShare <= 0 {
		o.LowShare = DefaultLowShare
	}
	if o.HighShare <= 0 {
		o.HighShare = DefaultHighShare
	}
	if o.HostLaw == "" {
		o.HostLaw = DefaultHostLaw
	}
	if o.ProbeLength <= 0 {
		o.ProbeLength = time.Second
	}
	if o.RunLength <= 0 {
		o.RunLength = 4 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Round is one round of a validation: its gap runs and probe, its measured run and the model's
// runs at its rate.
type Round struct {
	CapacityRPS float64 `json:"capacity_rps"`
	// LowOff and HighOff are the host's share of time off fitted at this round's gap runs
	// (FitGaps; shown: the model is fitted on every round's runs pooled).
	LowOff      float64 `json:"low_off_fraction"`
	HighOff     float64 `json:"high_off_fraction"`
	MeasuredRPS float64 `json:"measured_rps"`
	MeasuredP99 float64 `json:"measured_p99_ms"`
	SimRPS      float64 `json:"simulated_rps"`
	SimP99      float64 `json:"simulated_p99_ms"`
	// GeneratorLimited: the measured run's summary says the machine could not keep up.
	GeneratorLimited bool `json:"generator_limited"`
}

// Validation is the co-located model checked against the machine it was calibrated on.
type Validation struct {
	// Rate is the measured runs' offered rate; Share it over the first probe's capacity.
	Rate  float64 `json:"rate"`
	Share float64 `json:"share"`
	// LowRate and HighRate are the gap runs' rates.
	LowRate  float64 `json:"low_rate"`
	HighRate float64 `json:"high_rate"`
	// Host is the model's host at Rate: its share of time off carried from the gap runs' to Rate by
	// the host law (HostLoad; the pooled gap runs', Pooled.Load).
	Host *Host `json:"host"`
	// MeasuredOff is the share of time off the measured runs' median p99 would need, solved
	// as the gap runs' is (solveOff). Shown, not compared, and never fed to the model: next to
	// Host.OffFraction it says whether a miss is the host law's (the two differ) or the rest
	// of the model's (they agree and the p99 still misses).
	MeasuredOff float64 `json:"measured_off_fraction"`
	// LowP99Ms and HighP99Ms are the gap runs' median p99, measured and simulated.
	LowP99Ms  [2]float64 `json:"low_p99_ms"`
	HighP99Ms [2]float64 `json:"high_p99_ms"`
	// Rounds are the rounds one by one.
	Rounds []Round `json:"rounds"`
	// The medians over the rounds of the measured runs' throughput and p99 and of the models'
	// (each round's model from that round's own calibration): a round the background froze
	// moves a median by one place, where it would set a pooled p99.
	MeasuredRPS   float64 `json:"measured_rps"`
	MeasuredP99Ms float64 `json:"measured_p99_ms"`
	SimulatedRPS  float64 `json:"simulated_rps"`
	SimulatedP99  float64 `json:"simulated_p99_ms"`
	// MeasuredP99Interval is where the rounds' spread alone puts the measured median p99: a
	// distribution-free interval of the median (medianInterval) at IntervalCoverage, at least
	// 95% when the rounds allow it (64 rounds: 96.7%; 16 rounds: 97.9%; 5 rounds: the whole
	// range, 93.75%). When it reaches past 15% of the median, a 15% comparison is within the
	// measurement's own uncertainty, whichever way it comes out.
	MeasuredP99Interval [2]float64 `json:"measured_p99_interval_ms"`
	IntervalCoverage    float64    `json:"interval_coverage"`
	// ThroughputGap and P99Gap are (simulated - measured) / measured, of the medians.
	ThroughputGap float64 `json:"throughput_gap"`
	P99Gap        float64 `json:"p99_gap"`
	// Laws is the model at Rate under each host law (HostLoad.Law), the model's own (HostLaw)
	// first: the same gap runs and seeds, only the share of time off carried to Rate differs,
	// so the laws are compared side by side on one validation's runs. Shown; the gaps above
	// are the first law's.
	Laws []LawCheck `json:"laws"`
	// PooledMeasuredP99Ms and PooledSimulatedP99Ms merge every round's latencies (measured,
	// and simulated the same way): shown, not compared.
	PooledMeasuredP99Ms  float64 `json:"pooled_measured_p99_ms"`
	PooledSimulatedP99Ms float64 `json:"pooled_simulated_p99_ms"`
	// Pooled is the model's calibration, from every round's gap runs and probes (calibrateLoad).
	Pooled          Calibration `json:"pooled_calibration"`
	GeneratorLimits int         `json:"generator_limited_rounds"`
	// ElapsedS is the wall-clock time of the whole validation.
	ElapsedS float64 `json:"elapsed_s"`
}

// LawCheck is the model at the measured rate under one host law.
type LawCheck struct {
	Law          string  `json:"law"`
	OffFraction  float64 `json:"off_fraction"`
	SimulatedP99 float64 `json:"simulated_p99_ms"`
	P99Gap       float64 `json:"p99_gap"`
}

// ValidateCoLocated measures spec on the running cluster cl and compares the co-located model
// with it. A loaded machine's background changes from second to second, and a p99 follows it,
// so calibration and measurement are interleaved: after a first saturation probe (the
// capacity, which fixes the rates), each round runs the low gap run (LowShare of the
// capacity), the measured run (Rate, or Share of the capacity), the high gap run (HighShare)
// and a probe: the gap runs measure round trips, service time and how the scheduling gaps grow
// with our own load, one just before and one just after the measured run, so a background that
// drifts across the round weighs on both sides of it. The model is calibrated from
// the gap runs and probes only (calibrateLoad; it never sees the measured runs) and run at
// Rate; the medians over the rounds compare two independent numbers.
func ValidateCoLocated(ctx context.Context, cl *cluster.Local, spec *scenarios.Spec, opts ValidateOptions) (*Validation, error) {
	o := opts.withDefaults()
	if err := checkLaw(o.HostLaw); err != nil {
		return nil, fmt.Errorf("validate: --host-law: %w", err)
	}
	began := time.Now()
	out := o.Out
	if out == "" {
		d, err := os.MkdirTemp("", "ratelab-validate-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		out = d
	}
	_, state, err := saveState(cl, out)
	if err != nil {
		return nil, err
	}
	vr := &validationRuns{cl: cl, spec: spec, state: state, out: out, logf: o.Logf}
	probe, err := vr.firstProbe(ctx, &o)
	if err != nil {
		return nil, err
	}
	first := probe.answered()
	rates, err := o.rates(first)
	if err != nil {
		return nil, err
	}
	runs, err := vr.rounds(ctx, o, rates)
	if err != nil {
		return nil, err
	}
	v, err := compareModel(spec, len(cl.Primaries()), runs, rates.measured, first, o)
	if err != nil {
		return v, err
	}
	v.ElapsedS = time.Since(began).Seconds()
	return v, nil
}

// validationRuns runs a validation's scenario on its cluster, each run into a directory of its
// own under out, numbered in the order the runs ran.
type validationRuns struct {
	cl         *cluster.Local
	spec       *scenarios.Spec
	state, out string
	logf       func(string, ...any)
	n          int
}

// run runs the scenario at rate for d as a run of kind (probe, low, measured or high).
func (vr *validationRuns) run(ctx context.Context, kind string, rate float64, d time.Duration) (measured, error) {
	s := *vr.spec
	s.Load.Rate, s.Duration = rate, scenarios.Duration(d)
	vr.n++
	m, err := runOn(ctx, vr.cl, &s, vr.state, filepath.Join(vr.out, fmt.Sprintf("%02d-%s", vr.n, kind)))
	if err == nil {
		vr.logf("%s at %.0f/s: achieved %.0f/s, p50 %.3f ms, p99 %.3f ms", kind, rate, m.sum.Load.AchievedRPS, m.sum.LatencyServedMs.P50, m.sum.LatencyServedMs.P99)
	}
	return m, err
}

// firstProbe finds the machine's capacity, the base of the validation's rates: the decisions/s
// answered by a probe at o.ProbeRate, doubled until the machine cannot keep up (a probe it keeps
// up with measures the offered rate, not the capacity, and how far above the capacity a rate is
// depends on the machine). It returns the probe that saturated and leaves in o.ProbeRate the
// rounds' probe rate: at least twice its answer, since the capacity moves between probes.
func (vr *validationRuns) firstProbe(ctx context.Context, o *ValidateOptions) (measured, error) {
	p, err := vr.run(ctx, "probe", o.ProbeRate, o.ProbeLength)
	for err == nil && !saturated(p.sum.Load.Completed, p.sum.Load.OfferedRPS*p.sum.DurationS) && o.ProbeRate < maxProbeRate {
		o.ProbeRate *= 2
		o.Logf("probe: the machine kept up with it; again at %.0f/s", o.ProbeRate)
		p, err = vr.run(ctx, "probe", o.ProbeRate, o.ProbeLength)
	}
	if err != nil {
		return p, err
	}
	o.ProbeRate = math.Max(o.ProbeRate, 2*p.answered())
	return p, nil
}

// validationRates are a validation's offered rates: the measured runs' and the gap runs'.
type validationRates struct{ measured, low, high float64 }

// rates sets a validation's rates from the first probe's answer, first: the gap runs at LowShare
// and HighShare of it, the measured runs at Rate or Share of it.
func (o ValidateOptions) rates(first float64) (validationRates, error) {
	r := validationRates{measured: o.Rate, low: math.Round(o.LowShare * first), high: math.Round(o.HighShare * first)}
	if r.measured <= 0 {
		r.measured = math.Round(o.Share * first)
	}
	if !(0 < r.low && r.low < r.high && r.high < first) {
		return r, fmt.Errorf("validate: want 0 < low gap run %.0f/s < high gap run %.0f/s < the first probe's %.0f/s: set 0 < --low-share < --high-share < 1",
			r.low, r.high, first)
	}
	return r, nil
}

// rounds runs o.Rounds rounds, each the low gap run, the measured run, the high gap run and a
// probe, in that order: the measured run between the gap runs.
func (vr *validationRuns) rounds(ctx context.Context, o ValidateOptions, r validationRates) (sides, error) {
	var s sides
	for range o.Rounds {
		lo, err := vr.run(ctx, "low", r.low, o.RunLength)
		if err != nil {
			return s, err
		}
		m, err := vr.run(ctx, "measured", r.measured, o.RunLength)
		if err != nil {
			return s, err
		}
		hi, err := vr.run(ctx, "high", r.high, o.RunLength)
		if err != nil {
			return s, err
		}
		p, err := vr.run(ctx, "probe", o.ProbeRate, o.ProbeLength)
		if err != nil {
			return s, err
		}
		s.lows, s.highs = append(s.lows, lo), append(s.highs, hi)
		s.probes, s.runs = append(s.probes, p), append(s.runs, m)
	}
	return s, nil
}

// maxProbeRate caps the saturation probe's doubling: far above what one primary answers in
// central mode on any machine of this kind.
const maxProbeRate = 480_000

// saturated says a probe found the machine's capacity: it sent at most 95% of what was offered,
// the generator dropping the rest at the in-flight bound (calibratePooled asks it of the pooled
// probes, the validation of its first probe).
func saturated(decisions int64, offered float64) bool {
	return float64(decisions) <= 0.95*offered
}

// Text renders a validation for a terminal.
func (v *Validation) Text() string {
	var b strings.Builder
	c := v.Pooled
	where := "between them"
	if v.Rate < v.LowRate || v.Rate > v.HighRate {
		where = "outside them: the host's term is extrapolated"
	}
	fmt.Fprintf(&b, "co-located model vs measurement: %d rounds (gap runs at %.0f/s and %.0f/s, measured run at %.0f/s = %.0f%% of the first probe, %s; saturation probe)\n",
		len(v.Rounds), v.LowRate, v.HighRate, v.Rate, 100*v.Share, where)
	fmt.Fprintf(&b, "  %-5s %9s %15s | %9s %9s | %9s %9s\n", "round", "capacity", "off low/high", "meas/s", "meas p99", "sim/s", "sim p99")
	for i, r := range v.Rounds {
		lim := ""
		if r.GeneratorLimited {
			lim = "  (generator-limited)"
		}
		fmt.Fprintf(&b, "  %-5d %9.0f %6.2f%%/%5.2f%% | %9.0f %6.2f ms | %9.0f %6.2f ms%s\n",
			i+1, r.CapacityRPS, 100*r.LowOff, 100*r.HighOff, r.MeasuredRPS, r.MeasuredP99, r.SimRPS, r.SimP99, lim)
	}
	fmt.Fprintf(&b, "  median       measured %.0f/s p99 %.2f ms | simulated %.0f/s p99 %.2f ms | gaps: throughput %+.1f%%, p99 %+.1f%%\n",
		v.MeasuredRPS, v.MeasuredP99Ms, v.SimulatedRPS, v.SimulatedP99, 100*v.ThroughputGap, 100*v.P99Gap)
	if m := v.MeasuredP99Ms; m > 0 {
		lo, hi := v.MeasuredP99Interval[0], v.MeasuredP99Interval[1]
		wide := ""
		if lo < 0.85*m || hi > 1.15*m {
			wide = ": wider than the 15% compared, so the comparison is within the rounds' noise (more --rounds narrow it)"
		}
		fmt.Fprintf(&b, "  spread       the rounds put the measured median p99 in %.2f-%.2f ms (%.1f%% distribution-free interval, %+.0f%%/%+.0f%%)%s\n",
			lo, hi, 100*v.IntervalCoverage, 100*(lo-m)/m, 100*(hi-m)/m, wide)
	}
	fmt.Fprintf(&b, "  pooled       measured p99 %.2f ms | simulated p99 %.2f ms (every round's latencies merged; not compared)\n",
		v.PooledMeasuredP99Ms, v.PooledSimulatedP99Ms)
	if h, l := v.Host, c.Load; h != nil && l != nil {
		fmt.Fprintf(&b, "  model host   %.0f decisions/s at saturation; off %.2f%% at %.0f/s, %.2f%% at %.0f/s, so %.2f%% at %.0f/s by the %s law (the measured p99 needed %.2f%%); gaps %.2f ms mean, sigma %.2f\n",
			h.CapacityRPS, 100*l.LowOff, l.LowRPS, 100*l.HighOff, l.HighRPS, 100*h.OffFraction, v.Rate, l.Law, 100*v.MeasuredOff, h.OffMeanMs, h.OffSigma)
	}
	if len(v.Laws) > 0 {
		fmt.Fprintf(&b, "  host laws   ")
		for i, l := range v.Laws {
			sep := " |"
			if i == len(v.Laws)-1 {
				sep = " (side by side on these runs; the first is the model's)\n"
			}
			fmt.Fprintf(&b, " %s: off %.2f%%, p99 %.2f ms (%+.1f%%)%s", l.Law, 100*l.OffFraction, l.SimulatedP99, 100*l.P99Gap, sep)
		}
	}
	fmt.Fprintf(&b, "  gap runs     p99 measured/simulated: %.2f/%.2f ms at %.0f/s, %.2f/%.2f ms at %.0f/s\n",
		v.LowP99Ms[0], v.LowP99Ms[1], v.LowRate, v.HighP99Ms[0], v.HighP99Ms[1], v.HighRate)
	if c.Host != nil {
		fmt.Fprintf(&b, "  per decision client CPU %.0f µs, Redis CPU %.0f µs (marginal); service %.1f µs cv %.2f; round trip p50 %.3f ms\n",
			c.ClientCPUUs, c.RedisCPUUs, c.Service.MeanUs, c.Service.CV, c.Client.median())
	}
	fmt.Fprintf(&b, "  %.0f s wall\n", v.ElapsedS)
	return b.String()
}
