package bench

import (
	"fmt"
	"slices"
)

// Spread is one figure over the repetitions: the median (the mean of the middle two for an even
// count) and the range.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf is the Spread of vs; the zero Spread for none. Written here rather than taken from
// benchmath, which results/compare uses: a figure can be +Inf (a p99 that was not measurable),
// and an interpolating quantile can weigh +Inf by zero into NaN where a median should read +Inf.
func spreadOf(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// format renders the spread with f (a Printf verb for one number, or num for rates): the
// value alone for one repetition or when every repetition measured the same, else
// "median (min–max)".
func (s Spread) format(n int, f func(float64) string) string {
	if n <= 1 || f(s.Min) == f(s.Max) {
		return f(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

// Goal is a target of the table and how many repetitions met it.
type Goal struct {
	Row    string `json:"row"`
	Target string `json:"target"`
	Met    int    `json:"met"`
	Of     int    `json:"of"`
}

// Verdict is the target cell's conclusion: "met" or "not met" for one repetition, "met in k of
// N" for more.
func (g Goal) Verdict() string {
	if g.Of == 1 {
		if g.Met == 1 {
			return "met"
		}
		return "not met"
	}
	return fmt.Sprintf("met in %d of %d", g.Met, g.Of)
}

// goal is a target of the bench: the table row it belongs to, its text and its test on one
// repetition.
type goal struct {
	row, target string
	met         func(Repetition) bool
}

// Row names of the rows with targets that are not a section's only row.
const (
	rowGatewayMemory = SectionGateway + " " + GatewayMemory
	rowGatewayRedis  = SectionGateway + " " + GatewayRedis
)

// goals are the targets of docs/performance.md, one per row that has one.
var goals = []goal{
	// Decisions are counted over the load's window, a little longer than its whole seconds, so a
	// generator that decided every one of 2,000,000/s offered reads a few per second short.
	{SectionGenerator, ">= 2,000,000/s offered, 0 dropped, 99.9% decided in the window", func(r Repetition) bool {
		g := r.Generator
		return g.OfferedRPS >= 2_000_000 && g.Dropped == 0 && g.DecisionsPerSec >= 0.999*g.OfferedRPS
	}},
	{SectionMemory, "0 allocs", func(r Repetition) bool { return r.Memory.AllocsPerDecision == 0 }},
	{SectionCeiling, "best central / ceiling >= 0.9", func(r Repetition) bool { return r.Ratio.Value >= 0.9 }},
	{SectionLease, ">= 99% achieved, p99 < 1 ms", func(r Repetition) bool { return r.Lease.Achieved >= 0.99 && r.Lease.P99Ms < 1 }},
	{rowGatewayMemory, ">= 0.8x bare", func(r Repetition) bool { return r.Gateway.MemoryRatio >= 0.8 }},
	{rowGatewayRedis, ">= 0.6x bare", func(r Repetition) bool { return r.Gateway.RedisRatio >= 0.6 }},
}

// goalsMet counts, for every goal, the repetitions that met it.
func goalsMet(reps []Repetition) []Goal {
	out := make([]Goal, 0, len(goals))
	for _, g := range goals {
		r := Goal{Row: g.row, Target: g.target, Of: len(reps)}
		for _, rp := range reps {
			if g.met(rp) {
				r.Met++
			}
		}
		out = append(out, r)
	}
	return out
}

// goalOf returns the judged goal of row from gs, and false when the row has none.
func goalOf(gs []Goal, row string) (Goal, bool) {
	for _, g := range gs {
		if g.Row == row {
			return g, true
		}
	}
	return Goal{}, false
}
