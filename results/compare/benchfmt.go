package compare

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"ratelab/results"
)

// SideKey is the benchfmt configuration key of WriteBenchfmt's stream whose value, SideBase or
// SideNew, says which set a result line belongs to: `benchstat -col side FILE` puts the two
// sets side by side.
const (
	SideKey  = "side"
	SideBase = "base"
	SideNew  = "new"
)

// BenchName is the benchmark name of every result line, written with benchfmt's "Benchmark"
// prefix; the scenario is its sub-benchmark key ("BenchmarkRatelab/scenario=ci-smoke"), so runs
// of different scenarios stay apart.
const BenchName = "Ratelab"

// benchUnit is one metric as a benchfmt unit: its name, whether higher is better (a "Unit ...
// better=" metadata line tells benchstat which way is an improvement) and its value in that
// unit. Latency is in seconds ("-sec", the unit benchfmt tidies ns/op into), which benchstat
// scales (µ, m) by itself; ratios are plain numbers; the achieved rate is requests/s.
type benchUnit struct {
	name         string
	higherBetter bool
	value        func(*results.Summary) float64
}

// benchUnits are the units of WriteBenchfmt, one per metric of Metrics, in its order.
var benchUnits = []benchUnit{
	{"p50-sec", false, func(s *results.Summary) float64 { return seconds(s.LatencyMs.P50) }},
	{"p99-sec", false, func(s *results.Summary) float64 { return seconds(s.LatencyMs.P99) }},
	{"p999-sec", false, func(s *results.Summary) float64 { return seconds(s.LatencyMs.P999) }},
	{"achieved-req/s", true, func(s *results.Summary) float64 { return s.Load.AchievedRPS }},
	{"overspend-ratio", false, func(s *results.Summary) float64 { return s.Overspend.Ratio }},
	{"false-deny-ratio", false, func(s *results.Summary) float64 { return s.Overspend.FalseDenyRatio }},
	{"error-ratio", false, func(s *results.Summary) float64 { return results.Ratio(s.Outcomes.Errors, s.Load.Completed) }},
	{"generator-cpu-sec/decision", false, func(s *results.Summary) float64 { return s.GeneratorUsPerDecision() / 1e6 }},
}

// seconds is a latency in ms as seconds, rounded to 12 significant digits so that the division's
// binary noise (0.590 ms -> 0.0005899999999999999 s) stays out of the file.
func seconds(ms results.Ms) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(ms)/1e3, 'g', 12, 64), 64)
	return v
}

// WriteBenchfmt writes the runs of base and new as one Go benchmark format stream for benchstat:
// a "Unit NAME better=lower|higher" line per unit, then "side: base" and one result line per
// run of base, then "side: new" and one per run of new. A result line is
// "BenchmarkRatelab/scenario=NAME DECISIONS v1 unit1 v2 unit2 ...": the iteration count is the
// run's decisions. A latency percentile that is not measurable (it fell among the dropped
// requests) is written as the largest float64, never left out: a run that could not be measured
// stays in benchstat's median as the slowest value, where leaving it out would take the median
// of the runs that survived. (benchstat reads "+Inf" but its interpolated median turns it into
// NaN: 0 x Inf.) benchstat prints a median among such runs as "+Inf" beside finite ones, and a
// row of nothing else as a 309-digit number.
func WriteBenchfmt(w io.Writer, base, new *Set) error {
	bw := bufio.NewWriter(w)
	fw := benchfmt.NewWriter(bw)
	for _, u := range benchUnits {
		better := "lower"
		if u.higherBetter {
			better = "higher"
		}
		m := &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: u.name, Key: "better"}, OrigUnit: u.name, Value: better}
		if err := fw.Write(m); err != nil {
			return err
		}
	}
	for _, side := range []struct {
		name string
		set  *Set
	}{{SideBase, base}, {SideNew, new}} {
		for _, run := range side.set.Runs {
			if err := fw.Write(benchResult(side.name, run.Summary)); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// benchResult is one run's result line on side.
func benchResult(side string, s *results.Summary) *benchfmt.Result {
	r := &benchfmt.Result{
		Config: []benchfmt.Config{{Key: SideKey, Value: []byte(side), File: true}},
		// A name is one field of the line: no spaces.
		Name:  benchfmt.Name(BenchName + "/scenario=" + strings.Join(strings.Fields(s.Scenario), "_")),
		Iters: int(max(s.Load.Completed, 1)),
	}
	for _, u := range benchUnits {
		v := u.value(s)
		switch {
		case math.IsNaN(v): // no summary.json holds one; benchstat could not rank it
			continue
		case math.IsInf(v, 1):
			v = infStandIn
		}
		r.Values = append(r.Values, benchfmt.Value{Value: v, Unit: u.name})
	}
	return r
}
