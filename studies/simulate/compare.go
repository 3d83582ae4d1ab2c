package simulate

import (
	"errors"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// sides are a validation's runs by kind, round by round.
type sides struct{ lows, highs, probes, runs []measured }

// modelOf is the model of spec's runs on primaries primaries: its tenants, decision timeout and
// in-flight bound, to be completed with a calibration and a rate.
func modelOf(spec *scenarios.Spec, primaries int) Config {
	return Config{Primaries: primaries, Tenants: spec.Tenants.Count, Theta: spec.Tenants.Theta,
		Timeout: time.Duration(spec.Limiter.Timeout), MaxInflight: spec.Load.MaxInflight}
}

// compareModel calibrates the model from the gap runs and probes of r, runs it at rate and compares
// it with r's measured runs; first is the first probe's answer (the shares' base). One model serves
// every round, calibrated from all rounds' gap runs and probes pooled: a line through one round's
// two fits, each of a few dozen delayed decisions, is mostly noise.
func compareModel(spec *scenarios.Spec, primaries int, r sides, rate, first float64, o ValidateOptions) (*Validation, error) {
	base := modelOf(spec, primaries)
	cal, err := calibrateLoad(r.lows, r.highs, r.probes, o.ProbeRate, base)
	if err != nil {
		return nil, err
	}
	// The law only carries the two solved shares to other rates: it changes no gap run's fit.
	cal.Load.Law = o.HostLaw
	host := cal.HostAt(rate)
	v := &Validation{Rate: rate, Share: rate / first, LowRate: r.lows[0].sum.Load.OfferedRPS, HighRate: r.highs[0].sum.Load.OfferedRPS,
		Pooled: cal, Host: host}
	simHist, seedP99s, err := compareRounds(v, base, cal, r, o.RunLength)
	if err != nil {
		return nil, err
	}
	if err := compareGapRates(v, base, cal, r, o.RunLength); err != nil {
		return nil, err
	}
	var mRPS, mP99, sRPS []float64
	for _, rd := range v.Rounds {
		mRPS, mP99, sRPS = append(mRPS, rd.MeasuredRPS), append(mP99, rd.MeasuredP99), append(sRPS, rd.SimRPS)
	}
	v.MeasuredRPS, v.MeasuredP99Ms, v.SimulatedRPS, v.SimulatedP99 = median(mRPS), median(mP99), median(sRPS), median(seedP99s)
	v.MeasuredP99Interval[0], v.MeasuredP99Interval[1], v.IntervalCoverage = medianInterval(mP99, 0.95)
	v.PooledMeasuredP99Ms, v.PooledSimulatedP99Ms = pool(r.runs).hist.QuantileMs(99), simHist.QuantileMs(99)
	if v.MeasuredRPS <= 0 || v.MeasuredP99Ms <= 0 {
		return v, errors.New("validate: the measured runs recorded no decisions")
	}
	if v.MeasuredOff, err = solveOff(base, cal, rate, o.RunLength, v.MeasuredP99Ms, host.OffFraction); err != nil {
		return nil, err
	}
	v.ThroughputGap = (v.SimulatedRPS - v.MeasuredRPS) / v.MeasuredRPS
	v.P99Gap = (v.SimulatedP99 - v.MeasuredP99Ms) / v.MeasuredP99Ms
	if err := compareLaws(v, base, cal, o.HostLaw, len(r.runs), o.RunLength); err != nil {
		return nil, err
	}
	return v, nil
}

// compareRounds runs the model of each measured run of r (as long as the run, from empty, with
// the generator's in-flight bound) at v.Rate on v.Host and adds each round to v.Rounds. Each
// round gets simSeeds seeds of its own, each seed one run, and a round's simulated p99 is the
// median of its runs' p99s, as the validation's measured p99 is the median of the rounds'. It
// returns every model run's latencies merged and every run's p99.
func compareRounds(v *Validation, base Config, cal Calibration, r sides, dur time.Duration) (*results.Histogram, []float64, error) {
	simHist := results.NewHistogram()
	var seedP99s []float64
	for i := range r.runs {
		rs, err := modelRuns(base, cal, v.Host, v.Rate, dur, uint64(i)*simSeeds+1, simSeeds)
		if err != nil {
			return nil, nil, err
		}
		var rps float64
		for _, res := range rs {
			simHist.Merge(res.hist)
			rps += res.ThroughputRPS / simSeeds
		}
		p99s := p99sOf(rs)
		seedP99s = append(seedP99s, p99s...)
		m := r.runs[i].sum
		rd := Round{CapacityRPS: r.probes[i].answered(), LowOff: r.lows[i].gaps().OffFraction, HighOff: r.highs[i].gaps().OffFraction,
			MeasuredRPS: m.Load.AchievedRPS, MeasuredP99: m.LatencyServedMs.P99, SimRPS: rps, SimP99: median(p99s),
			GeneratorLimited: m.Load.GeneratorLimited}
		if rd.GeneratorLimited {
			v.GeneratorLimits++
		}
		v.Rounds = append(v.Rounds, rd)
	}
	return simHist, seedP99s, nil
}

// compareGapRates runs the model at its own calibration rates: how well the shares solved there
// reproduce the gap runs' p99 (shown, not compared; a law fitted to two good points can still
// miss beyond them).
func compareGapRates(v *Validation, base Config, cal Calibration, r sides, dur time.Duration) error {
	for _, at := range []struct {
		rate float64
		runs []measured
		fit  *[2]float64
	}{{cal.Load.LowRPS, r.lows, &v.LowP99Ms}, {cal.Load.HighRPS, r.highs, &v.HighP99Ms}} {
		var meas []float64
		for _, m := range at.runs {
			meas = append(meas, m.sum.LatencyServedMs.P99)
		}
		sim, err := modelP99s(base, cal, cal.HostAt(at.rate), at.rate, dur, len(at.runs))
		if err != nil {
			return err
		}
		*at.fit = [2]float64{median(meas), median(sim)}
	}
	return nil
}

// compareLaws fills v.Laws: the model at v.Rate under each host law, law (the model's own) first,
// on the same gap runs and seeds; only the share of time off carried to v.Rate differs.
func compareLaws(v *Validation, base Config, cal Calibration, law string, rounds int, dur time.Duration) error {
	v.Laws = append(v.Laws, LawCheck{Law: law, OffFraction: v.Host.OffFraction, SimulatedP99: v.SimulatedP99, P99Gap: v.P99Gap})
	for _, other := range []string{LawFloor, LawErlangC, LawProportional} {
		if other == law {
			continue
		}
		alt := cal
		l := *cal.Load
		l.Law = other
		alt.Load = &l
		h := alt.HostAt(v.Rate)
		p99s, err := modelP99s(base, alt, h, v.Rate, dur, rounds)
		if err != nil {
			return err
		}
		p := median(p99s)
		v.Laws = append(v.Laws, LawCheck{Law: other, OffFraction: h.OffFraction, SimulatedP99: p, P99Gap: (p - v.MeasuredP99Ms) / v.MeasuredP99Ms})
	}
	return nil
}

// modelP99s is the p99s of the model of rounds runs at rate on host, simSeeds seeds a round
// (round i's seeds from i x simSeeds + 1, as the measured rounds' own models have them).
func modelP99s(base Config, cal Calibration, host *Host, rate float64, dur time.Duration, rounds int) ([]float64, error) {
	var p99s []float64
	for i := range rounds {
		rs, err := modelRuns(base, cal, host, rate, dur, uint64(i)*simSeeds+1, simSeeds)
		if err != nil {
			return nil, err
		}
		p99s = append(p99s, p99sOf(rs)...)
	}
	return p99s, nil
}

// simSeeds is how many seeds the model of one measured run is pooled over.
const simSeeds = 6
