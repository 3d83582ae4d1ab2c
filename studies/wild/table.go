package wild

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"ratelab/results"
)

// Table renders the rows as Markdown: achieved rate, p99 over offered requests, overspend and
// false denies (confirmed..possible), burst excess of the worst key, central calls per decision,
// errors and how long after its fault the decisions succeeded again; a gubernator GLOBAL row adds
// its design bound (see GlobalBound).
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| limiter | fault | achieved/s | p99 ms (offered) | overspend ratio (confirmed..possible) | false denies / decisions | false-deny ratio (of denied) | burst excess, worst key (tokens) | central calls / decision | errors | recovered after the fault |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range rows {
		fault := r.Fault
		if fault == "" {
			fault = "none"
		}
		s := r.Summary
		if s == nil {
			fmt.Fprintf(&b, "| %s | %s | failed: %s ||||||||\n", r.Variant.Name, fault, r.Err)
			continue
		}
		o := s.Overspend
		p99 := s.LatencyMs.P99.String()
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %.2g..%.2g | %.2g | %.2g..%.2g | %.1f%s | %s | %d | %s |\n",
			r.Variant.Name, fault, s.Load.AchievedRPS, p99, o.Ratio, o.PossibleRatio,
			float64(o.FalseDenies)/math.Max(float64(s.Load.Completed), 1), o.FalseDenyRatio, o.PossibleFalseDenyRatio,
			o.BurstExcess.WorstTokens, boundNote(r), callsPerDecision(r), s.Outcomes.Errors, recovery(s.Faults))
	}
	return b.String()
}

// recovery is the recovery cell of a run with one fault: seconds from its end until decisions
// succeeded again, "never" when they did not within the run, "no errors" when none failed, and
// "-" for a run without a fault (or a fault that could not be carried out: "failed").
func recovery(faults []results.Fault) string {
	if len(faults) == 0 {
		return "-"
	}
	f := faults[0]
	switch after, ok := f.RecoveredAfterS(); {
	case f.Failed:
		return "failed"
	case !f.Seen():
		return "no errors"
	case !ok:
		return "never"
	default:
		return fmt.Sprintf("%.1f s", after)
	}
}

// callsPerDecision is the Redis decision commands per decision for the Redis kinds, and for
// gubernator the one HTTP call each decision makes (its peer traffic is not counted).
func callsPerDecision(r Row) string {
	if r.Daemons > 0 {
		return "1 (HTTP)"
	}
	s := r.Summary
	return fmt.Sprintf("%.3f", float64(s.Central.Ops)/math.Max(float64(s.Load.Completed), 1))
}

// GlobalBound is the burst excess the design of GLOBAL allows one key if every daemon but the
// owner spends, between two syncs, what the key refills in one sync period, on a copy the owner
// has not debited yet: (daemons - 1) x rate x sync wait per period. It is the bound for one sync
// period; docs/limiters.md says why the measured excess is not bounded by it.
func GlobalBound(daemons int, rate float64, sync float64) float64 {
	return float64(daemons-1) * rate * sync
}

// boundNote adds GLOBAL's per-sync bound beside a gubernator global row's burst excess.
func boundNote(r Row) string {
	if r.Daemons == 0 || r.Variant.Behavior != "global" {
		return ""
	}
	return fmt.Sprintf(" (GLOBAL per-sync bound %.0f)", GlobalBound(r.Daemons, r.Rate, r.SyncWait.Seconds()))
}

// Plot draws the worst key's burst excess per limiter, without and with its fault, as grouped
// bars, into path (PNG).
func Plot(rows []Row, path string) error {
	var names []string
	var clean, faulted plotter.Values
	idx := map[string]int{}
	for _, r := range rows {
		i, ok := idx[r.Variant.Name]
		if !ok {
			i = len(names)
			idx[r.Variant.Name] = i
			names = append(names, r.Variant.Name)
			clean, faulted = append(clean, 0), append(faulted, 0)
		}
		v := 0.0
		if r.Summary != nil {
			v = r.Summary.Overspend.BurstExcess.WorstTokens
		}
		if r.Fault == "" {
			clean[i] = v
		} else {
			faulted[i] = v
		}
	}
	p := plot.New()
	p.Title.Text = "Burst excess of the worst key, same trace (tokens)"
	p.Y.Label.Text = "tokens beyond the burst"
	w := vg.Points(18)
	a, err := plotter.NewBarChart(clean, w)
	if err != nil {
		return err
	}
	b, err := plotter.NewBarChart(faulted, w)
	if err != nil {
		return err
	}
	a.Offset, b.Offset = -w/2, w/2
	b.Color = plotter.DefaultLineStyle.Color
	a.LineStyle.Width, b.LineStyle.Width = 0, 0
	a.Color = color.Gray{Y: 170}
	p.Add(a, b)
	p.Legend.Add("no fault", a)
	p.Legend.Add("one fault", b)
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(names...)
	return p.Save(9*vg.Inch, 4*vg.Inch, path)
}
