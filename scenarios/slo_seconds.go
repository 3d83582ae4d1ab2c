package scenarios

import (
	"math"
	"slices"

	"ratelab/results"
)

// Second is one second of a run as the per-second SLO checks read it.
type Second struct {
	// Row is the second's timeseries row.
	Row *results.Interval
	// Latency holds the second's percentiles over its offered requests, as the run's p99_ms
	// check reads them over the run: results.LatencyOf of the second's histogram, with the
	// second's requests that had no decision when its row was written (dropped, ended in an
	// error, or still in flight) counted as slower than any latency.
	Latency results.Latency
}

// NewSecond returns the Second of a row and its histogram of served (decided) requests.
func NewSecond(row *results.Interval, h *results.Histogram) Second {
	lat, _ := results.LatencyOf(h, row.Undecided())
	return Second{Row: row, Latency: lat}
}

// secondChecks are the SLO checks with a per-second counterpart: each reads one second the way
// its run-wide check reads the run. ok is false when the second has nothing to judge (no
// request offered, answered, allowed or denied, whichever the check divides by). recovered_s
// (per fault), rss_growth, heap_growth and goroutine_growth (the process from warm-up to the
// end) have none.
var secondChecks = map[string]func(s *Second) (v float64, ok bool){
	"p99_ms":  func(s *Second) (float64, bool) { return float64(s.Latency.P99), s.Row.Offered > 0 },
	"p999_ms": func(s *Second) (float64, bool) { return float64(s.Latency.P999), s.Row.Offered > 0 },
	"achieved_ratio": func(s *Second) (float64, bool) {
		return results.Ratio(s.Row.Achieved(), s.Row.Offered), s.Row.Offered > 0
	},
	"error_ratio": func(s *Second) (float64, bool) {
		done := s.Row.Served() + s.Row.Errors // as the run's: errors over completed decisions
		return results.Ratio(s.Row.Errors, done), done > 0
	},
	"overspend_ratio": func(s *Second) (float64, bool) {
		let := s.Row.Allowed + s.Row.FailedOpen
		return results.Ratio(s.Row.Overspend, let), let > 0
	},
	"false_deny_ratio": func(s *Second) (float64, bool) {
		denied := s.Row.Denied + s.Row.FailedClosed
		return results.Ratio(s.Row.FalseDenies, denied), denied > 0
	},
}

// HasSecondCheck reports whether the SLO check key has a per-second counterpart.
func HasSecondCheck(key string) bool { return secondChecks[key] != nil }

// FirstFailures judges a run second by second against the SLO's checks that have a per-second
// counterpart, and keeps for each the first second that failed it: with load.stages, the offered
// rate at which the check gave way. Add the seconds in order.
type FirstFailures struct {
	checks []secondCheck
	out    results.Stages
}

// secondCheck is one judged check: its key, bound and direction, and where its failure is kept.
type secondCheck struct {
	name    string
	limit   float64
	atLeast bool
	value   func(*Second) (float64, bool)
	failure int // index in out.FirstFailure, -1 before the first
}

// NewFirstFailures returns a judge of the SLO's per-second checks.
func (s *SLO) NewFirstFailures() *FirstFailures {
	f := &FirstFailures{out: results.Stages{Checked: []string{}, FirstFailure: []results.StageFailure{}}}
	for _, fl := range sloFields {
		p := *fl.field(s)
		if p == nil || secondChecks[fl.name] == nil {
			continue
		}
		f.checks = append(f.checks, secondCheck{name: fl.name, limit: *p, atLeast: fl.atLeast, value: secondChecks[fl.name], failure: -1})
		f.out.Checked = append(f.out.Checked, fl.name)
	}
	return f
}

// Add judges one second. A value that is not measurable (a percentile among the unanswered
// requests) fails a ceiling.
func (f *FirstFailures) Add(sec Second) {
	f.out.PeakOfferedRPS = max(f.out.PeakOfferedRPS, float64(sec.Row.Offered))
	for i := range f.checks {
		c := &f.checks[i]
		v, ok := c.value(&sec)
		if !ok {
			continue
		}
		pass := v <= c.limit
		if c.atLeast {
			pass = v >= c.limit
		}
		if pass {
			continue
		}
		if c.failure >= 0 {
			f.out.FirstFailure[c.failure].FailedSeconds++
			continue
		}
		var value *float64
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			value = &v
		}
		c.failure = len(f.out.FirstFailure)
		f.out.FirstFailure = append(f.out.FirstFailure, results.StageFailure{
			Check: c.name, AtS: sec.Row.TS, OfferedRPS: float64(sec.Row.Offered), Value: value, Limit: c.limit, FailedSeconds: 1,
		})
	}
}

// Result is what the seconds added so far show.
func (f *FirstFailures) Result() *results.Stages {
	out := f.out
	out.Checked = slices.Clone(out.Checked)
	out.FirstFailure = slices.Clone(out.FirstFailure)
	return &out
}
