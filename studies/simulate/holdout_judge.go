package simulate

import (
	"cmp"
	"fmt"
	"math"

	"ratelab/cluster"
	"ratelab/studies/capacity"
)

// Tolerances of the held-out validation: a prediction is within tolerance when its error is at
// most these. A node's share of the script calls is compared in percentage points, p99 and
// knee relatively, the busiest primary exactly.
const (
	ShareTolerancePoints = 2.0
	P99Tolerance         = 0.25
	KneeTolerance        = 0.20
)

// The metrics a Check's errors are in.
const (
	MetricPoints   = "points"   // the largest |predicted - measured| node share, in percentage points
	MetricRelative = "relative" // |predicted - measured| / measured
	MetricExact    = "exact"    // 0 when the predicted node is the measured one, 1 otherwise
)

// Check is one quantity of the held-out validation: what was measured, what the model and the
// naive baseline predicted, their errors, and the verdict.
type Check struct {
	Quantity string `json:"quantity"`
	// Measured, Model and Baseline are the quantity (a node share's check: the measured busiest
	// node's share; the busiest primary's: the node's index). Measured is NaN-free: when the
	// measurement is missing Missing says why and the check is not validated.
	Measured float64 `json:"measured"`
	Model    float64 `json:"model"`
	Baseline float64 `json:"baseline"`
	Unit     string  `json:"unit"`
	// BaselineRule says how the baseline was computed from the calibration runs.
	BaselineRule string `json:"baseline_rule"`
	// Metric is what ModelError, BaselineError and Tolerance are in (MetricPoints,
	// MetricRelative or MetricExact); the errors are magnitudes.
	Metric        string  `json:"metric"`
	ModelError    float64 `json:"model_error"`
	BaselineError float64 `json:"baseline_error"`
	Tolerance     float64 `json:"tolerance"`
	// Validated holds only when the model is within tolerance and strictly nearer than the
	// baseline; Why says which of the two failed, or both.
	Validated bool   `json:"validated"`
	Why       string `json:"why"`
	Missing   string `json:"missing,omitempty"`
	// Nodes are a share check's per-node shares (0-1): measured, model and baseline.
	Nodes []NodeShare `json:"nodes,omitempty"`
}

// NodeShare is one primary's share of the script calls.
type NodeShare struct {
	Node     int     `json:"node"`
	Measured float64 `json:"measured"`
	Model    float64 `json:"model"`
	Baseline float64 `json:"baseline"`
}

// judgeCheck fills c's verdict from its errors: validated only when the model is within the
// tolerance and beats the baseline.
func judgeCheck(c Check) Check {
	within := c.ModelError <= c.Tolerance
	beats := c.ModelError < c.BaselineError
	c.Validated = c.Missing == "" && within && beats
	if c.Missing != "" {
		c.Why = "not validated: no measurement (" + c.Missing + ")"
		return c
	}
	if c.Metric == MetricExact {
		c.Why = exactWhy(c.ModelError == 0, c.BaselineError != 0)
		return c
	}
	f := func(v float64) string { return formatError(c.Metric, v) }
	switch {
	case c.Validated:
		c.Why = fmt.Sprintf("validated: model off by %s (tolerance %s), baseline by %s", f(c.ModelError), f(c.Tolerance), f(c.BaselineError))
	case !within && !beats:
		c.Why = fmt.Sprintf("not validated: model off by %s, beyond the tolerance %s, and the baseline is as near or nearer (%s)", f(c.ModelError), f(c.Tolerance), f(c.BaselineError))
	case !within:
		c.Why = fmt.Sprintf("not validated: model off by %s, beyond the tolerance %s (the baseline is off by %s)", f(c.ModelError), f(c.Tolerance), f(c.BaselineError))
	default:
		c.Why = fmt.Sprintf("not validated: model within the tolerance (%s of %s) but the baseline is as near or nearer (%s)", f(c.ModelError), f(c.Tolerance), f(c.BaselineError))
	}
	return c
}

// exactWhy is the verdict of an exact check: whether the model and the baseline named the
// measured node.
func exactWhy(modelRight, baselineWrong bool) string {
	switch {
	case modelRight && baselineWrong:
		return "validated: the model names the measured primary, the baseline does not"
	case modelRight:
		return "not validated: the model names the measured primary, but so does the baseline"
	case baselineWrong:
		return "not validated: the model names another primary (so does the baseline)"
	}
	return "not validated: the model names another primary; the baseline names the measured one"
}

// formatError renders an error or tolerance in metric's terms (MetricPoints or MetricRelative).
func formatError(metric string, v float64) string {
	if metric == MetricPoints {
		return fmt.Sprintf("%.1f pt", v)
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// relativeError is |predicted - measured| / measured (+Inf when measured is not > 0).
func relativeError(predicted, measured float64) float64 {
	if !(measured > 0) {
		return math.Inf(1)
	}
	return math.Abs(predicted-measured) / measured
}

// pointsError is the largest |predicted - measured| over nodes, shares in 0-1, in percentage
// points.
func pointsError(predicted, measured []float64) float64 {
	if len(predicted) != len(measured) || len(measured) == 0 {
		return math.Inf(1)
	}
	worst := 0.0
	for i := range measured {
		worst = math.Max(worst, 100*math.Abs(predicted[i]-measured[i]))
	}
	return worst
}

// equalShares is the naive node shares: each of n primaries carries 1/n.
func equalShares(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1 / float64(n)
	}
	return out
}

// linearP99 is the naive p99 at rate: the straight line through the calibration's two gap runs
// (rate, p99), floored at the lower of their p99s (a line falling with the rate would reach 0).
func linearP99(loRate, loP99, hiRate, hiP99, rate float64) float64 {
	floor := math.Min(loP99, hiP99)
	if hiRate == loRate {
		return math.Max(floor, (loP99+hiP99)/2)
	}
	slope := (hiP99 - loP99) / (hiRate - loRate)
	return math.Max(floor, loP99+slope*(rate-loRate))
}

// mostTenantsNode is the naive busiest of n primaries: the one whose slots hold the most of the
// tenants (every tenant taken as equally busy), the lowest index on a tie.
func mostTenantsNode(tenants, n int) int {
	count := make([]int, n)
	for k := range tenants {
		count[capacity.PrimaryOfSlot(cluster.KeySlot(capacity.TenantName(k)), n)]++
	}
	return argmax(count)
}

// modelShares is the model's share of the script calls on each of n primaries: the tenants'
// Zipf popularity summed over the slots each primary owns (exact slot hashing), as the model
// plans its primaries' arrivals.
func modelShares(tenants int, theta float64, n int) ([]float64, error) {
	pop, err := capacity.NewPopularity(tenants, theta)
	if err != nil {
		return nil, err
	}
	s := capacity.LoadBySlot(pop, 1, func(r float64) float64 { return r }).Primaries(n)
	total := 0.0
	for _, v := range s {
		total += v
	}
	for i := range s {
		s[i] /= total
	}
	return s, nil
}

// argmax is the index of xs's largest element (the first of equals), 0 for an empty slice.
func argmax[T cmp.Ordered](xs []T) int {
	best := 0
	for i, v := range xs {
		if v > xs[best] {
			best = i
		}
	}
	return best
}
