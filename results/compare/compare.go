package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"ratelab/results"
)

// Defaults of Options.
const (
	// DefaultAlpha is the significance level: p below it rejects "same distribution" (benchstat's).
	DefaultAlpha = 0.05
	// DefaultConfidence is the confidence level of the medians' intervals (benchstat's).
	DefaultConfidence = 0.95
)

// Options tune a comparison. The zero value uses the defaults.
type Options struct {
	// Alpha is the significance level of the U test; default DefaultAlpha.
	Alpha float64
	// Confidence is the level of the medians' confidence intervals; default DefaultConfidence.
	Confidence float64
	// Thresholds override Metric.Default by metric name (see ParseThreshold).
	Thresholds map[string]Threshold
	// Metrics names the metrics to compare, in table order; default every metric of Metrics.
	Metrics []string
}

func (o Options) withDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	return o
}

// Verdict is the outcome of one metric.
type Verdict string

// Verdicts, from the gate's point of view. Only Regression fails it.
const (
	// Regression: significant, worse, and beyond the threshold.
	Regression Verdict = "REGRESSION"
	// WorseWithin: significant and worse, but within the threshold.
	WorseWithin Verdict = "worse, within threshold"
	// Improved: significant and better.
	Improved Verdict = "improved"
	// NoChange: the U test finds no significant difference.
	NoChange Verdict = "~ no significant change"
	// TooFew: not enough runs for the U test to ever reach significance.
	TooFew Verdict = "too few runs for a verdict"
	// NotMeasured: some run's summary does not hold the metric (the generator's CPU in a
	// summary of an older ratelab); the metric is not compared, and a note says so.
	NotMeasured Verdict = "not in every run"
)

// Row is one metric compared.
type Row struct {
	Metric Metric
	// Base and New are each set's values, sorted.
	Base, New []float64
	// BaseMedian, NewMedian and their confidence intervals (infinite with too few runs). A
	// latency median is +Inf when it is not measurable (the middle run's percentile fell among
	// its dropped requests).
	BaseMedian, BaseLo, BaseHi float64
	NewMedian, NewLo, NewHi    float64
	// DeltaPct is (NewMedian/BaseMedian - 1) * 100; NaN when BaseMedian is 0 or either median is
	// not measurable.
	DeltaPct float64
	// Delta is NewMedian - BaseMedian, in the metric's unit: +Inf when only NEW's median is not
	// measurable, -Inf when only BASE's is, 0 when neither is.
	Delta float64
	// P is the Mann-Whitney U test's two-sided p-value.
	P float64
	// Threshold is the one applied.
	Threshold Threshold
	Verdict   Verdict
}

// Report is a whole comparison.
type Report struct {
	Base, New *Set
	Options   Options
	Rows      []Row
	// MinRuns is the least number of runs per set for which the U test can reach significance
	// at Options.Alpha (4 at 0.05).
	MinRuns int
	// Notes are warnings for the reader: too few runs, different scenarios, skipped runs.
	Notes []string
	// NoVerdict is true when both sets have fewer than MinRuns runs: no difference could be
	// significant, so "no regression" would be a pass the data cannot back.
	NoVerdict bool
}

// Regressed reports whether any metric regressed: the gate fails.
func (r *Report) Regressed() bool {
	for _, row := range r.Rows {
		if row.Verdict == Regression {
			return true
		}
	}
	return false
}

// Regressions lists the regressed metrics' names.
func (r *Report) Regressions() []string {
	var out []string
	for _, row := range r.Rows {
		if row.Verdict == Regression {
			out = append(out, row.Metric.Name)
		}
	}
	return out
}

// Compare compares every metric of Metrics between base and new. A metric regresses only when
// the U test finds the sets different (p < alpha) and new's median is worse than base's by more
// than the metric's threshold. A latency percentile that is not measurable (+Inf) is worse than
// any finite one and beyond every threshold: against a finite BASE it regresses as soon as the
// U test finds the sets different.
//
// Sets of different summary schemas are refused (ErrSchemas): v1's latency was over answered
// requests, v2's is over offered ones. Two v1 sets compare, with a note that they use the old
// definitions.
func Compare(base, new *Set, opts Options) (*Report, error) {
	if base.Schema != new.Schema {
		return nil, fmt.Errorf("compare: BASE %s holds %s runs, NEW %s holds %s runs: the definitions differ "+
			"(latency over answered or over offered requests, overspend ranges), so the numbers do not compare; "+
			"rerun the %s side with this ratelab (a committed baseline: make perf-check-baseline): %w",
			strings.Join(base.Paths, ","), base.Schema, strings.Join(new.Paths, ","), new.Schema, oldSide(base, new), ErrSchemas)
	}
	opts = opts.withDefaults()
	if opts.Alpha <= 0 || opts.Alpha >= 1 {
		return nil, fmt.Errorf("compare: alpha = %g: want 0 < alpha < 1, e.g. 0.05", opts.Alpha)
	}
	if opts.Confidence <= 0 || opts.Confidence >= 1 {
		return nil, fmt.Errorf("compare: confidence = %g: want 0 < confidence < 1, e.g. 0.95", opts.Confidence)
	}
	for name := range opts.Thresholds {
		if _, ok := metricByName(name); !ok {
			return nil, fmt.Errorf("compare: threshold for unknown metric %q; use one of %s", name, metricNames())
		}
	}
	metrics, err := opts.metrics()
	if err != nil {
		return nil, err
	}
	rep := &Report{Base: base, New: new, Options: opts, MinRuns: minRunsFor(opts.Alpha)}
	nb, nn := len(base.Runs), len(new.Runs)
	tooFew := nb < rep.MinRuns && nn < rep.MinRuns
	rep.NoVerdict = tooFew
	if nb < rep.MinRuns || nn < rep.MinRuns {
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"%d BASE and %d NEW runs: the U test needs at least %d runs in each set to reach p < %g at all; run with --repeat %d or more",
			nb, nn, rep.MinRuns, opts.Alpha, max(rep.MinRuns, 6)))
	}
	if need := minRunsForCI(opts.Confidence); min(nb, nn) < need {
		rep.Notes = append(rep.Notes, fmt.Sprintf("a %g%% confidence interval of a median needs at least %d runs (shown as ±∞ with fewer)", 100*opts.Confidence, need))
	}
	if bs, ns := base.Scenarios(), new.Scenarios(); len(bs) != 1 || len(ns) != 1 || bs[0] != ns[0] {
		rep.Notes = append(rep.Notes, fmt.Sprintf("scenarios differ: BASE %s, NEW %s: the comparison may not mean much",
			strings.Join(bs, ","), strings.Join(ns, ",")))
	}
	if be, ne := environments(base), environments(new); be != ne {
		rep.Notes = append(rep.Notes, fmt.Sprintf("environments differ: BASE %s, NEW %s: a difference may be the machine's", be, ne))
	}
	for _, s := range base.Skipped {
		rep.Notes = append(rep.Notes, "BASE left out "+s)
	}
	for _, s := range new.Skipped {
		rep.Notes = append(rep.Notes, "NEW left out "+s)
	}
	if n := (&results.Summary{Schema: base.Schema}).OldDefinitions(); n != "" {
		rep.Notes = append(rep.Notes, n)
	}
	for _, m := range metrics {
		row := Row{Metric: m, Threshold: m.Default}
		if t, ok := opts.Thresholds[m.Name]; ok {
			row.Threshold = t
		}
		row.Base, row.New = values(base, m), values(new, m)
		if nb, nn := countNaN(row.Base), countNaN(row.New); nb+nn > 0 {
			row.Verdict = NotMeasured
			row.BaseMedian, row.BaseLo, row.BaseHi = math.NaN(), math.NaN(), math.NaN()
			row.NewMedian, row.NewLo, row.NewHi = math.NaN(), math.NaN(), math.NaN()
			row.Delta, row.DeltaPct, row.P = math.NaN(), math.NaN(), math.NaN()
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s is missing from %d of %d BASE and %d of %d NEW runs (a summary of an older ratelab, "+
				"or a run that did not measure it): not compared", m.Name, nb, len(row.Base), nn, len(row.New)))
			rep.Rows = append(rep.Rows, row)
			continue
		}
		row.BaseMedian = median(row.Base)
		row.NewMedian = median(row.New)
		row.BaseLo, row.BaseHi, _ = medianCI(row.Base, opts.Confidence)
		row.NewLo, row.NewHi, _ = medianCI(row.New, opts.Confidence)
		row.Delta, row.DeltaPct = deltas(row.BaseMedian, row.NewMedian)
		row.P = mannWhitneyP(row.Base, row.New)
		row.Verdict = verdict(row, opts.Alpha, tooFew)
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// metrics resolves Options.Metrics to the metrics to compare.
func (o Options) metrics() ([]Metric, error) {
	if len(o.Metrics) == 0 {
		return Metrics, nil
	}
	out := make([]Metric, 0, len(o.Metrics))
	for _, name := range o.Metrics {
		m, ok := metricByName(name)
		if !ok {
			return nil, fmt.Errorf("compare: metrics: unknown metric %q; use some of %s", name, metricNames())
		}
		out = append(out, m)
	}
	return out, nil
}

// countNaN counts the values a run's summary did not hold.
func countNaN(xs []float64) int {
	n := 0
	for _, x := range xs {
		if math.IsNaN(x) {
			n++
		}
	}
	return n
}

// oldSide names the side whose runs have an older schema than this ratelab writes, the one to
// rerun.
func oldSide(base, new *Set) string {
	if new.Schema != results.SchemaSummary {
		return "NEW"
	}
	return "BASE"
}

// deltas returns new - base and the change in percent of base (see Row.Delta and Row.DeltaPct).
func deltas(base, new float64) (delta, pct float64) {
	bInf, nInf := math.IsInf(base, 1), math.IsInf(new, 1)
	switch {
	case bInf && nInf:
		return 0, math.NaN()
	case bInf || nInf:
		return new - base, math.NaN()
	case base != 0:
		return new - base, (new/base - 1) * 100
	case new == 0:
		return 0, 0
	}
	return new - base, math.NaN()
}

// verdict judges one row.
func verdict(row Row, alpha float64, tooFew bool) Verdict {
	if row.P >= alpha {
		if tooFew {
			return TooFew
		}
		return NoChange
	}
	m := row.Metric
	worse := row.NewMedian > row.BaseMedian
	if !m.HigherIsWorse {
		worse = row.NewMedian < row.BaseMedian
	}
	switch {
	case !worse && row.NewMedian != row.BaseMedian:
		return Improved
	case !worse:
		return NoChange // the distributions differ but their medians do not
	case row.Threshold.exceeded(m, row.BaseMedian, row.NewMedian):
		return Regression
	default:
		return WorseWithin
	}
}

// environments describes the distinct measuring environments of a set's runs (Redis version,
// topology, cores, mode): the parts that change numbers when they change.
func environments(s *Set) string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.Runs {
		e := r.Summary.Environment
		d := fmt.Sprintf("redis %s %dx%d, %d cores, %s", e.RedisVersion, e.Primaries, e.Replicas, e.Cores, e.Mode)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// values reads metric m from every run of s, sorted.
func values(s *Set, m Metric) []float64 {
	out := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		out[i] = m.Value(r.Summary)
	}
	sort.Float64s(out)
	return out
}
