package simulate

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"ratelab/cluster"
	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// DefaultProbeDuration is the length of the saturation probe of CalibrateCoLocated.
const DefaultProbeDuration = 2 * time.Second

// measured is one run on a running cluster with what it cost: server stats before and after,
// this process's CPU over it, its summary and latency histogram.
type measured struct {
	before, after cluster.NodeStats
	clientCPU     float64 // seconds of this process's CPU over the run
	sum           *results.Summary
	hist          *results.Histogram
	fit           *Gaps // gaps() once read
}

// gaps is FitGaps of the run's latencies, fitted once: trimmedGaps and the validation's rounds
// both read it, and a fit reads the whole histogram.
func (m *measured) gaps() Gaps {
	if m.fit == nil {
		g := FitGaps(m.hist)
		m.fit = &g
	}
	return *m.fit
}

// answered is decisions per second that got an answer (allowed or denied).
func (m measured) answered() float64 {
	if m.sum.DurationS <= 0 {
		return 0
	}
	return float64(m.sum.Outcomes.Allowed+m.sum.Outcomes.Denied) / m.sum.DurationS
}

// runOn runs spec (faults dropped, cluster section replaced) against cl, whose state file is
// state, into dir.
func runOn(ctx context.Context, cl *cluster.Local, spec *scenarios.Spec, state, dir string) (measured, error) {
	var m measured
	// Every run starts from a collected heap: a light run right after a saturation probe
	// otherwise pays for the probe's garbage.
	runtime.GC()
	var addrs []string
	for _, n := range cl.Primaries() {
		addrs = append(addrs, n.Addr)
	}
	run := *spec
	run.Faults = nil
	run.Cluster.Provider = "running"
	var err error
	if m.before, err = cluster.ReadNodeStats(ctx, addrs); err != nil {
		return m, err
	}
	cpu := processCPU()
	res, err := engine.Run(ctx, &run, engine.Options{Out: dir, StateFile: state})
	if err != nil {
		return m, err
	}
	m.clientCPU = processCPU() - cpu
	if m.after, err = cluster.ReadNodeStats(ctx, addrs); err != nil {
		return m, err
	}
	m.sum = res.Summary
	f, err := os.Open(filepath.Join(res.Dir, results.HistogramFile))
	if err != nil {
		return m, err
	}
	defer f.Close()
	if m.hist, err = results.ReadHistogram(f); err != nil {
		return m, fmt.Errorf("%s: %w", results.HistogramFile, err)
	}
	return m, nil
}

// saveState writes cl's state file under out (a temp dir when out is empty) for runOn.
func saveState(cl *cluster.Local, out string) (dir, state string, err error) {
	if out == "" {
		if out, err = os.MkdirTemp("", "ratelab-calibrate-"); err != nil {
			return "", "", err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", "", err
	}
	state = filepath.Join(out, "cluster.json")
	return out, state, cl.SaveState(state)
}

// Measure runs spec against the running cluster cl (spec's faults dropped, its cluster section
// replaced by cl), with server stats taken before and after, and returns the calibration, the
// run's summary and its directory (out, or a temp dir when out is empty). Run it at a light
// load: its latencies are read as round trips and scheduling gaps, not queueing.
func Measure(ctx context.Context, cl *cluster.Local, spec *scenarios.Spec, out string) (Calibration, *results.Summary, error) {
	out, state, err := saveState(cl, out)
	if err != nil {
		return Calibration{}, nil, err
	}
	defer os.Remove(state)
	m, err := runOn(ctx, cl, spec, state, filepath.Join(out, "run"))
	if err != nil {
		return Calibration{}, nil, err
	}
	cal, err := Calibrate(m.before, m.after, m.hist)
	if err == nil && m.sum.Load.Completed > 0 {
		cal.ClientCPUUs = m.clientCPU * 1e6 / float64(m.sum.Load.Completed)
	}
	return cal, m.sum, err
}

// CalibrateCoLocated is Measure followed by a saturation probe, the same spec at probeRate (far
// above what the machine carries) for DefaultProbeDuration, and two gap runs as long as the
// light run at DefaultLowShare and DefaultHighShare of the probe's answered rate. The probe's
// answered decisions per second are the machine's capacity for the limiter's work (CoLocate),
// the light run and the probe give the marginal CPU per decision of the client and of Redis,
// and the gap runs how the machine's scheduling gaps grow with our own load (HostLoad). It
// returns the co-located calibration, the light run's summary and the probe's.
func CalibrateCoLocated(ctx context.Context, cl *cluster.Local, spec *scenarios.Spec, probeRate float64, out string) (Calibration, *results.Summary, *results.Summary, error) {
	out, state, err := saveState(cl, out)
	if err != nil {
		return Calibration{}, nil, nil, err
	}
	defer os.Remove(state)
	light, err := runOn(ctx, cl, spec, state, filepath.Join(out, "run"))
	if err != nil {
		return Calibration{}, nil, nil, err
	}
	probe := *spec
	probe.Load.Rate = probeRate
	probe.Duration = scenarios.Duration(DefaultProbeDuration)
	sat, err := runOn(ctx, cl, &probe, state, filepath.Join(out, "probe"))
	if err != nil {
		return Calibration{}, light.sum, nil, err
	}
	var gaps [2]measured
	for i, share := range []float64{DefaultLowShare, DefaultHighShare} {
		g := *spec
		g.Load.Rate = math.Round(share * sat.answered())
		if gaps[i], err = runOn(ctx, cl, &g, state, filepath.Join(out, fmt.Sprintf("gaps-%.0f", 100*share))); err != nil {
			return Calibration{}, light.sum, sat.sum, err
		}
	}
	cal, err := calibrateLoad(gaps[:1], gaps[1:], []measured{sat}, probeRate, modelOf(spec, len(cl.Primaries())))
	return cal, light.sum, sat.sum, err
}

// pooled is several runs of one kind added up: their CPU, server-stat deltas, time, decisions
// and latencies.
type pooled struct {
	delta              cluster.NodeStats // after - before, summed; percentiles from the last run
	clientCPU, seconds float64
	decisions, answers int64
	offered            float64 // decisions offered
	hist               *results.Histogram
}

func pool(ms []measured) pooled {
	p := pooled{hist: results.NewHistogram()}
	for _, m := range ms {
		p.delta.Calls += m.after.Calls - m.before.Calls
		p.delta.Usec += m.after.Usec - m.before.Usec
		p.delta.CPUSeconds += m.after.CPUSeconds - m.before.CPUSeconds
		p.delta.TotalCPUSeconds += m.after.TotalCPUSeconds - m.before.TotalCPUSeconds
		p.delta.P50Us, p.delta.P99Us = m.after.P50Us, m.after.P99Us
		p.clientCPU += m.clientCPU
		p.seconds += m.sum.DurationS
		p.decisions += m.sum.Load.Completed
		p.answers += m.sum.Outcomes.Allowed + m.sum.Outcomes.Denied
		p.offered += m.sum.Load.OfferedRPS * m.sum.DurationS
		p.hist.Merge(m.hist)
	}
	return p
}

func (p pooled) rate() float64 { return float64(p.decisions) / math.Max(p.seconds, 1e-9) }

// calibratePooled calibrates on light runs and completes the co-located model from probes at
// probeRate: capacity is the probes' answered decisions per second, and the CPU per second of
// the two kinds against their rates gives the marginal CPU per decision.
func calibratePooled(light, sat pooled, probeRate float64) (Calibration, error) {
	cal, err := Calibrate(cluster.NodeStats{}, light.delta, light.hist)
	if err != nil {
		return cal, err
	}
	capacity := float64(sat.answers) / math.Max(sat.seconds, 1e-9)
	if capacity < 1.2*light.rate() || !saturated(sat.decisions, sat.offered) {
		return cal, fmt.Errorf("calibration: the probe at %.0f/s answered %.0f/s, the light run %.0f/s: the probe did not saturate the machine (raise the probe rate) or the light run was not light (lower its rate)",
			probeRate, capacity, light.rate())
	}
	dRate := sat.rate() - light.rate()
	cal.ClientCPUUs = light.clientCPU * 1e6 / float64(max(light.decisions, 1))
	if c := (sat.clientCPU/sat.seconds - light.clientCPU/light.seconds) * 1e6 / dRate; c > 0 {
		cal.ClientCPUUs = c
	}
	if c := (sat.delta.TotalCPUSeconds/sat.seconds - light.delta.TotalCPUSeconds/light.seconds) * 1e6 / dRate; c > 0 {
		cal.RedisCPUUs = c
	}
	// The primary's service time is likewise the main thread's marginal CPU per call between the
	// two runs, not the light run's average: at a light rate the thread's fixed costs
	// (serverCron, waking from an idle epoll) are spread over few calls, and the average
	// overstates a call's cost several times, putting the primary near saturation at rates it
	// carries easily (docs/capacity.md has the figures). The client time keeps what it was: the
	// light run's body minus the service time used here.
	if dCalls := float64(sat.delta.Calls)/sat.seconds - float64(light.delta.Calls)/light.seconds; dCalls > 0 {
		if us := (sat.delta.CPUSeconds/sat.seconds - light.delta.CPUSeconds/light.seconds) * 1e6 / dCalls; us > 0 && us < cal.Service.MeanUs {
			cal.Client = cal.Client.shift((cal.Service.MeanUs - us) / 1e3)
			cal.Source += fmt.Sprintf("; service %.1f µs: the main thread's marginal CPU per call up to the probe (%.0f µs on average in the light run)", us, cal.Service.MeanUs)
			cal.Service.MeanUs = us
		}
	}
	return cal.CoLocate(capacity, light.rate())
}

// calibrateLoad is calibratePooled (the low gap runs as its light runs, and the probes, pooled)
// completed with the gap runs (Calibration.WithLoad): the gaps' shape from each kind's runs
// pooled, the disturbed ones left out (trimmedGaps), and the share of time off at each gap rate
// solved for with the model (solveOff): the share at which the model's median p99 over runs as
// long as the gap runs is theirs. base is the model of the runs (primaries, tenants, timeout,
// in-flight bound).
func calibrateLoad(lows, highs, probes []measured, probeRate float64, base Config) (Calibration, error) {
	// The round trips, the service time and the marginal CPU come from the low gap runs: a
	// lighter run has a wider body than the busier runs (idle threads pay wake-up costs a busy
	// process does not), which would put the model's p99 at the gap rates above the measured
	// one before any gap is added.
	cal, err := calibratePooled(pool(lows), pool(probes), probeRate)
	if err != nil {
		return cal, err
	}
	lg, loRPS := trimmedGaps(lows)
	hg, hiRPS := trimmedGaps(highs)
	if cal, err = cal.WithLoad(lg, loRPS, hg, hiRPS); err != nil {
		return cal, err
	}
	l := *cal.Load
	for _, at := range []struct {
		runs []measured
		rate float64
		off  *float64
	}{{lows, l.LowRPS, &l.LowOff}, {highs, l.HighRPS, &l.HighOff}} {
		var p99s []float64
		for _, m := range at.runs {
			p99s = append(p99s, m.sum.LatencyServedMs.P99)
		}
		if *at.off, err = solveOff(base, cal, at.rate, time.Duration(at.runs[0].sum.DurationS*float64(time.Second)), median(p99s), *at.off); err != nil {
			return cal, err
		}
	}
	cal.Load = &l
	cal.Source += fmt.Sprintf("; off solved for the gap runs' p99: %.2f%% at %.0f/s, %.2f%% at %.0f/s", 100*l.LowOff, l.LowRPS, 100*l.HighOff, l.HighRPS)
	return cal, nil
}

// trimmedGaps fits the gaps of runs pooled, leaving out the disturbed ones: a run whose tail
// share is more than twice the median run's. It returns the fit and the pooled runs' rate.
// Pooling every run lets a second the background froze set the gaps, and one run alone holds
// too few gaps to read a shape from (docs/capacity.md has both).
func trimmedGaps(runs []measured) (Gaps, float64) {
	shares := make([]float64, len(runs))
	for i := range runs {
		shares[i] = runs[i].gaps().TailShare
	}
	limit := 2 * median(append([]float64(nil), shares...))
	var keep []measured
	for i, m := range runs {
		if shares[i] <= limit {
			keep = append(keep, m)
		}
	}
	p := pool(keep)
	return FitGaps(p.hist), p.rate()
}

// solveOff is the host's share of time off at which the model, run at rate for runs of dur,
// has a median p99 over solveRuns runs of wantP99 (bisection in log share between a twentieth
// and twenty times guess, or 0.5%). FitGaps reads the share from a run's tail in closed form,
// which holds at a light load only: rests shorter than its threshold are missed, and at a
// busier load decisions queued behind a gap's backlog are added, which the model then adds a
// second time, so the closed form puts the model's p99 above the gap runs' own. The gaps'
// length and spread stay the closed form's; the share is what the p99 answers to.
func solveOff(base Config, cal Calibration, rate float64, dur time.Duration, wantP99, guess float64) (float64, error) {
	if cal.Host == nil || !(wantP99 > 0) || cal.Host.OffMeanMs <= 0 {
		return guess, nil
	}
	if guess <= 0 {
		guess = 0.005
	}
	p99At := func(off float64) (float64, error) {
		h := *cal.Host
		h.OffFraction = off
		rs, err := modelRuns(base, cal, &h, rate, dur, 1, solveRuns)
		return median(p99sOf(rs)), err
	}
	if p, err := p99At(0); err != nil || p >= wantP99 {
		return 0, err // the model without gaps is already as slow: the gaps add nothing
	}
	lo, hi := math.Log(guess/20), math.Log(math.Min(0.95, guess*20))
	for range solveSteps {
		mid := (lo + hi) / 2
		p, err := p99At(math.Exp(mid))
		if err != nil {
			return 0, err
		}
		if p < wantP99 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2), nil
}

// modelRuns runs the model of n one-machine runs, seeds first.., each at rate for dur on host:
// base (primaries, tenants, timeout, in-flight bound) with cal's service time, client time and
// client CPU. The validation and solveOff compare these runs' p99s with measured runs' p99s.
func modelRuns(base Config, cal Calibration, host *Host, rate float64, dur time.Duration, first uint64, n int) ([]*Result, error) {
	cfg := base
	cfg.Rate, cfg.Service, cfg.Client, cfg.Host, cfg.ClientCPUUs = rate, cal.Service, cal.Client, host, cal.ClientCPUUs
	cfg.Horizon, cfg.MaxRequests = dur, 10_000_000
	out := make([]*Result, 0, n)
	for seed := first; seed < first+uint64(n); seed++ {
		cfg.Seed = seed
		r, err := Simulate(cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// p99sOf is each result's p99.
func p99sOf(rs []*Result) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.P99Ms
	}
	return out
}

// solveSteps and solveRuns are solveOff's bisection steps and the runs each step simulates. A
// model run's p99 is set by the few dozen gaps a run holds, as a measured run's is, so the share
// solved carries the luck of its runs' median: solveRuns is enough runs for the model at the gap
// rates to reproduce the p99 it was solved for (the validation's gap runs line shows it).
const (
	solveSteps = 10
	solveRuns  = 32
)

// CalibrateLocal starts a one-primary local cluster (no replicas), calibrates on it (Measure,
// or CalibrateCoLocated when probeRate > 0) and stops the cluster.
func CalibrateLocal(ctx context.Context, spec *scenarios.Spec, probeRate float64, out string, logf func(string, ...any)) (Calibration, *results.Summary, error) {
	cl, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas,
		NodeTimeout: time.Duration(spec.Cluster.NodeTimeout), Logf: logf})
	if err != nil {
		return Calibration{}, nil, err
	}
	defer cl.Close()
	run := *spec
	run.Cluster.Primaries = 1
	none := 0
	run.Cluster.Replicas = &none
	if probeRate > 0 {
		cal, sum, _, err := CalibrateCoLocated(ctx, cl, &run, probeRate, out)
		return cal, sum, err
	}
	return Measure(ctx, cl, &run, out)
}
