package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"ratelab/results"
)

// Metric is one number read from every run's summary.json and compared across the two sets.
type Metric struct {
	// Name is the key used in tables and in --threshold (the SLO key where one exists).
	Name string
	// Unit is printed after values ("ms", "req/s", "" for ratios).
	Unit string
	// HigherIsWorse says which direction is a regression (latency up, achieved rate down).
	HigherIsWorse bool
	// Default is the threshold a significant change must exceed to count as a regression.
	Default Threshold
	// Value reads the metric from a summary; +Inf for a latency that is not measurable, NaN for
	// a figure the summary does not hold.
	Value func(*results.Summary) float64
}

// Metrics are the compared metrics, in table order. Latency is over offered requests (latency_ms):
// a percentile that fell among the dropped requests is +Inf, worse than any finite one. Overspend
// and false denies are the confirmed figures, as the SLO checks judge them. Latency thresholds
// are relative: a p99 that moves by 10% matters whatever its size. Ratios near zero get
// absolute thresholds: from 1e-5 to 2e-5 is +100% and means nothing; +1e-3 is one request in a
// thousand.
var Metrics = []Metric{
	{"p50_ms", "ms", true, Threshold{Value: 0.10, Relative: true}, func(s *results.Summary) float64 { return float64(s.LatencyMs.P50) }},
	{"p99_ms", "ms", true, Threshold{Value: 0.10, Relative: true}, func(s *results.Summary) float64 { return float64(s.LatencyMs.P99) }},
	// p99.9 of a few thousand decisions rests on a handful of them: a wider default.
	{"p999_ms", "ms", true, Threshold{Value: 0.20, Relative: true}, func(s *results.Summary) float64 { return float64(s.LatencyMs.P999) }},
	{"achieved_rps", "req/s", false, Threshold{Value: 0.05, Relative: true}, func(s *results.Summary) float64 { return s.Load.AchievedRPS }},
	{"overspend_ratio", "", true, Threshold{Value: 1e-3}, func(s *results.Summary) float64 { return s.Overspend.Ratio }},
	{"false_deny_ratio", "", true, Threshold{Value: 2e-3}, func(s *results.Summary) float64 { return s.Overspend.FalseDenyRatio }},
	{"error_ratio", "", true, Threshold{Value: 1e-3}, func(s *results.Summary) float64 {
		return results.Ratio(s.Outcomes.Errors, s.Load.Completed)
	}},
	// The generator's own CPU per decision: ratelab's cost of deciding, which latency does not
	// show. NaN in a summary without a cpu section (an older ratelab).
	{"generator_cpu_us", "µs/decision", true, Threshold{Value: 0.05, Relative: true}, (*results.Summary).GeneratorUsPerDecision},
}

// Threshold is how far a significant change may go in the worse direction before it is a
// regression: a share of the BASE median (Relative, 0.10 = 10%) or an absolute amount in the
// metric's unit.
type Threshold struct {
	Value    float64
	Relative bool
}

// String writes a threshold the way ParseThreshold reads it back: "10%" or "0.001".
func (t Threshold) String() string {
	if t.Relative {
		return strconv.FormatFloat(100*t.Value, 'g', 4, 64) + "%"
	}
	return strconv.FormatFloat(t.Value, 'g', 4, 64)
}

// exceeded reports whether moving from base to new in the worse direction goes beyond t.
func (t Threshold) exceeded(m Metric, base, new float64) bool {
	worse := new - base
	if !m.HigherIsWorse {
		worse = base - new
	}
	if worse <= 0 {
		return false
	}
	if !t.Relative {
		return worse > t.Value
	}
	if base == 0 {
		return true // from nothing to something: beyond any share of nothing
	}
	return worse/math.Abs(base) > t.Value
}

// metricByName finds a metric of Metrics.
func metricByName(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// metricNames lists the metric keys for error messages.
func metricNames() string {
	names := make([]string, len(Metrics))
	for i, m := range Metrics {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// ParseThreshold reads "key=value" as given to --threshold: p99_ms=15% (a share of the BASE
// median) or overspend_ratio=0.002 (absolute, in the metric's unit). A leading + is allowed.
func ParseThreshold(kv string) (string, Threshold, error) {
	key, val, ok := strings.Cut(kv, "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if !ok || key == "" || val == "" {
		return "", Threshold{}, fmt.Errorf("--threshold %q: want key=value, e.g. p99_ms=15%% or overspend_ratio=0.002", kv)
	}
	if _, ok := metricByName(key); !ok {
		return "", Threshold{}, fmt.Errorf("--threshold %q: unknown metric %q; use one of %s", kv, key, metricNames())
	}
	var t Threshold
	num := strings.TrimPrefix(val, "+")
	if strings.HasSuffix(num, "%") {
		t.Relative = true
		num = strings.TrimSuffix(num, "%")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "", Threshold{}, fmt.Errorf("--threshold %q: value %q is not a number >= 0; write 15%% for a share of the BASE median or 0.002 for an absolute amount", kv, val)
	}
	if t.Relative {
		v /= 100
	}
	t.Value = v
	return key, t, nil
}
