package simulate

import (
	"math"
	"time"

	"ratelab/scenarios"
)

// kneeSeeds is the model runs per rate of the model's knee search (their median p99 and
// achieved share are judged), and kneeSteps its bisection steps.
const (
	kneeSeeds = 3
	kneeSteps = 10
)

// predict fills h.Model: the model of h's calibration at each measured run's rate and cluster
// size. Node shares come from the tenants' popularity summed over each primary's slots (what
// the model's primaries receive); p99s from simSeeds x o.Repeats model runs as long as the measured
// runs, on the co-located host at each rate (HostAt); the busiest primary is the model's at the
// top level; the knees come from a bisection of the model (modelKnee).
func (h *Holdout) predict(spec *scenarios.Spec, o HoldoutOptions) error {
	m, cal, n := h.Measured, h.Calibration, o.Primaries
	for _, s := range m.Shares {
		shares, err := modelShares(spec.Tenants.Count, s.Theta, n)
		if err != nil {
			return err
		}
		h.Model.Shares = append(h.Model.Shares, shares)
	}
	base := modelOf(spec, n)
	for i, l := range m.Levels {
		rs, err := modelRuns(base, cal, cal.HostAt(l.Rate), l.Rate, o.RunLength, 1, simSeeds*o.Repeats)
		if err != nil {
			return err
		}
		h.Model.P99Ms = append(h.Model.P99Ms, median(p99sOf(rs)))
		if i == len(m.Levels)-1 {
			h.Model.Busiest = rs[0].HotPrimary
			for _, r := range rs {
				h.ModelHotUtilisation += r.Primaries[r.HotPrimary].Utilisation / float64(len(rs))
			}
		}
	}
	// Both knees are searched between the same bounds: from a 25th of the probe's answer to
	// twice n times it, past the proportional baseline.
	var err error
	probe := h.CalibrationRuns.ProbeAnsweredRPS
	lo, hi := probe/25, 2*float64(n)*probe
	if h.Model.Knee1RPS, err = modelKnee(modelOf(spec, 1), cal, o.StepLength, lo, hi); err != nil {
		return err
	}
	h.Model.KneeNRPS, err = modelKnee(base, cal, o.StepLength, lo, hi)
	return err
}

// modelKnee is the highest rate in [lo, hi] at which the model of base (on cal's co-located
// host) meets the knee's SLO over runs of dur: median p99 of kneeSeeds runs at most KneeP99Ms
// and median achieved share at least KneeAchieved (kneeSearch; 0 when lo fails).
func modelKnee(base Config, cal Calibration, dur time.Duration, lo, hi float64) (float64, error) {
	return kneeSearch(lo, hi, kneeSteps, func(rate float64) (bool, error) {
		rs, err := modelRuns(base, cal, cal.HostAt(rate), rate, dur, 1, kneeSeeds)
		if err != nil {
			return false, err
		}
		achieved := make([]float64, len(rs))
		for i, r := range rs {
			achieved[i] = modelAchieved(r)
		}
		return median(p99sOf(rs)) <= KneeP99Ms && median(achieved) >= KneeAchieved, nil
	})
}

// modelAchieved is a model run's answered decisions per second (completed, less the timed-out
// share) over its offered rate: the run's achieved ratio.
func modelAchieved(r *Result) float64 {
	if r.Decisions == 0 || r.Config.Rate <= 0 {
		return 0
	}
	answered := 1 - float64(r.Timeouts)/float64(r.Decisions)
	return r.ThroughputRPS * answered / r.Config.Rate
}

// kneeSearch is the highest rate in [lo, hi] at which pass holds, for a pass that holds below
// some rate and fails above it: hi when hi passes, 0 when lo fails, else the lower end of a
// geometric bisection of steps steps.
func kneeSearch(lo, hi float64, steps int, pass func(float64) (bool, error)) (float64, error) {
	if ok, err := pass(hi); err != nil || ok {
		return hi, err
	}
	if ok, err := pass(lo); err != nil || !ok {
		return 0, err
	}
	for range steps {
		mid := math.Sqrt(lo * hi)
		ok, err := pass(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
