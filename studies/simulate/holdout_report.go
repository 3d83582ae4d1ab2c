package simulate

import (
	"fmt"
	"strings"
)

// HeldOut is what the runs the model never saw measured.
type HeldOut struct {
	// Knee1RPS and KneeNRPS are the knees of 1 and N primaries: the highest offered rate whose
	// step met p99 <= KneeP99Ms with at least KneeAchieved of it achieved; 0 when no step did.
	Knee1RPS float64 `json:"knee_1_rps"`
	KneeNRPS float64 `json:"knee_n_rps"`
	// KneeNotes are the sweeps' notes (a knee that is only a lower bound, or none).
	KneeNotes []string `json:"knee_notes,omitempty"`
	// SaturationRPS is the base of the p99 levels: KneeNRPS, or when no step of N primaries met
	// the SLO, the highest rate any of its steps achieved.
	SaturationRPS float64 `json:"saturation_rps"`
	// Levels are the p99 runs on N primaries, one entry per level.
	Levels []LevelRuns `json:"levels"`
	// Shares are the node-share runs on N primaries, one per Zipf exponent.
	Shares []ShareRun `json:"shares"`
	// BusyShare is each primary's main-thread CPU over the top level's runs as a share of their
	// time, and Busiest the busiest primary.
	BusyShare []float64 `json:"busy_share"`
	Busiest   int       `json:"busiest"`
}

// LevelRuns are the runs at one share of the saturation.
type LevelRuns struct {
	Level float64 `json:"level"`
	Rate  float64 `json:"rate"`
	// P99Ms is each run's p99 of the answered decisions and MedianP99Ms their median.
	P99Ms       []float64 `json:"p99_ms"`
	MedianP99Ms float64   `json:"median_p99_ms"`
}

// ShareRun is one run's script calls by primary.
type ShareRun struct {
	Theta  float64   `json:"theta"`
	Rate   float64   `json:"rate"`
	Calls  []int64   `json:"calls"`
	Shares []float64 `json:"shares"`
}

// Estimates are the quantities the held-out runs measure, as the model or a baseline predicts
// them: P99Ms one per level of HeldOut.Levels, Shares one per HeldOut.Shares.
type Estimates struct {
	Knee1RPS float64     `json:"knee_1_rps"`
	KneeNRPS float64     `json:"knee_n_rps"`
	P99Ms    []float64   `json:"p99_ms"`
	Shares   [][]float64 `json:"shares"`
	Busiest  int         `json:"busiest"`
}

// How the baselines are computed from the calibration runs.
const (
	ruleShares  = "equal split: 1/N per primary"
	ruleP99     = "straight line through the calibration's two gap runs (rate, p99), floored at their lower p99"
	ruleKnee1   = "the calibration probe's answered rate"
	ruleKneeN   = "N x the calibration probe's answered rate (proportional scaling)"
	ruleBusiest = "the primary whose slots hold the most tenants (every tenant equally busy)"
)

// judgeHoldout compares the model and the baseline with the measurement of n primaries,
// quantity by quantity.
func judgeHoldout(n int, m HeldOut, model, base Estimates) []Check {
	var out []Check
	for i, s := range m.Shares {
		c := Check{Quantity: fmt.Sprintf("node share, Zipf %g (%d primaries)", s.Theta, n), Unit: "share",
			BaselineRule: ruleShares, Metric: MetricPoints, Tolerance: ShareTolerancePoints}
		hot := argmax(s.Shares)
		c.Measured, c.Model, c.Baseline = s.Shares[hot], model.Shares[i][hot], base.Shares[i][hot]
		for k := range s.Shares {
			c.Nodes = append(c.Nodes, NodeShare{Node: k, Measured: s.Shares[k], Model: model.Shares[i][k], Baseline: base.Shares[i][k]})
		}
		c.ModelError, c.BaselineError = pointsError(model.Shares[i], s.Shares), pointsError(base.Shares[i], s.Shares)
		if sumInt(s.Calls) == 0 {
			c.Missing = "the run made no script calls"
		}
		out = append(out, judgeCheck(c))
	}
	for i, l := range m.Levels {
		out = append(out, relativeCheck(fmt.Sprintf("p99 at %.0f%% of saturation, %.0f/s (%d primaries)", 100*l.Level, l.Rate, n),
			"ms", ruleP99, P99Tolerance, l.MedianP99Ms, model.P99Ms[i], base.P99Ms[i], "no answered decisions"))
	}
	out = append(out,
		relativeCheck("knee, 1 primary", "decisions/s", ruleKnee1, KneeTolerance, m.Knee1RPS, model.Knee1RPS, base.Knee1RPS, "no step met the SLO"),
		relativeCheck(fmt.Sprintf("knee, %d primaries", n), "decisions/s", ruleKneeN, KneeTolerance, m.KneeNRPS, model.KneeNRPS, base.KneeNRPS, "no step met the SLO"))
	c := Check{Quantity: fmt.Sprintf("busiest primary's main thread (%d primaries)", n), Unit: "node", BaselineRule: ruleBusiest,
		Metric: MetricExact, Measured: float64(m.Busiest), Model: float64(model.Busiest), Baseline: float64(base.Busiest)}
	if model.Busiest != m.Busiest {
		c.ModelError = 1
	}
	if base.Busiest != m.Busiest {
		c.BaselineError = 1
	}
	if len(m.BusyShare) == 0 {
		c.Missing = "no top-level runs"
	}
	return append(out, judgeCheck(c))
}

// relativeCheck is a check compared relatively; a measured value that is not > 0 is missing
// (why says what that means).
func relativeCheck(quantity, unit, rule string, tol, measured, model, base float64, why string) Check {
	c := Check{Quantity: quantity, Unit: unit, BaselineRule: rule, Metric: MetricRelative, Tolerance: tol,
		Measured: measured, Model: model, Baseline: base,
		ModelError: relativeError(model, measured), BaselineError: relativeError(base, measured)}
	if !(measured > 0) {
		c.Missing = why
		c.ModelError, c.BaselineError = 0, 0 // +Inf does not encode as JSON
	}
	return judgeCheck(c)
}

func sumInt(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}

// Text renders the validation's table and the verdict of each quantity.
func (h *Holdout) Text() string {
	var b strings.Builder
	cr := h.CalibrationRuns
	fmt.Fprintf(&b, "held-out validation: calibrated on 1 primary (probe answered %.0f/s; gap runs %.0f/s p99 %.2f ms, %.0f/s p99 %.2f ms), judged on %d primaries' and the knees' runs, none used in calibration\n",
		cr.ProbeAnsweredRPS, cr.LowRPS, cr.LowP99Ms, cr.HighRPS, cr.HighP99Ms, h.Primaries)
	fmt.Fprintf(&b, "  %-52s %13s %13s %13s %11s %11s %9s  %s\n", "quantity", "measured", "model", "baseline", "model err", "base err", "tol", "verdict")
	for _, c := range h.Checks {
		v := "validated"
		if !c.Validated {
			v = "NOT validated"
		}
		fmt.Fprintf(&b, "  %-52s %13s %13s %13s %11s %11s %9s  %s\n", c.Quantity, formatValue(c, c.Measured), formatValue(c, c.Model), formatValue(c, c.Baseline),
			errCell(c, c.ModelError), errCell(c, c.BaselineError), tolCell(c), v)
	}
	fmt.Fprintf(&b, "%d of %d validated (validated: within tolerance and nearer than the baseline)\n", h.Validated, len(h.Checks))
	for _, c := range h.Checks {
		fmt.Fprintf(&b, "  %s: %s\n", c.Quantity, c.Why)
		if len(c.Nodes) > 0 {
			fmt.Fprintf(&b, "    per primary (measured/model/baseline):")
			for _, n := range c.Nodes {
				fmt.Fprintf(&b, " #%d %.1f/%.1f/%.1f%%", n.Node, 100*n.Measured, 100*n.Model, 100*n.Baseline)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("baselines:\n")
	for _, r := range []string{ruleShares, ruleP99, ruleKnee1, ruleKneeN, ruleBusiest} {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	m := h.Measured
	fmt.Fprintf(&b, "measured: busiest primary #%d, main thread busy", m.Busiest)
	for i, s := range m.BusyShare {
		fmt.Fprintf(&b, " #%d %.0f%%", i, 100*s)
	}
	fmt.Fprintf(&b, " at the top level; the model's busiest primary %.0f%% busy there\n", 100*h.ModelHotUtilisation)
	for _, n := range m.KneeNotes {
		fmt.Fprintf(&b, "  knee: %s\n", n)
	}
	fmt.Fprintf(&b, "calibration: %s\n%.0f s wall\n", h.Calibration.Source, h.ElapsedS)
	return b.String()
}

// formatValue renders one of c's values in its unit.
func formatValue(c Check, v float64) string {
	switch c.Unit {
	case "share":
		return fmt.Sprintf("%.1f%%", 100*v)
	case "ms":
		return fmt.Sprintf("%.2f ms", v)
	case "node":
		return fmt.Sprintf("#%.0f", v)
	case "decisions/s":
		return fmt.Sprintf("%.0f/s", v)
	}
	return fmt.Sprintf("%g", v)
}

// errCell renders an error in a table cell: "-" when the measurement is missing.
func errCell(c Check, v float64) string {
	if c.Missing != "" {
		return "-"
	}
	return shortError(c.Metric, v)
}

// tolCell renders c's tolerance in a table cell.
func tolCell(c Check) string {
	if c.Metric == MetricExact {
		return "exact"
	}
	return "±" + shortError(c.Metric, c.Tolerance)
}

func shortError(metric string, v float64) string {
	switch metric {
	case MetricPoints:
		return fmt.Sprintf("%.1f pt", v)
	case MetricRelative:
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	if v == 0 {
		return "same"
	}
	return "other"
}
