package gate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ratelab/results/compare"
)

// CompareFile is the comparison as Markdown in Out, for a CI job summary.
const CompareFile = "compare.md"

// Headline says what the gate compared, in one paragraph: builds alternated on one cluster, or
// days (the committed baseline), with the timings.
func (r *Result) Headline() string {
	var b strings.Builder
	switch r.Mode {
	case Days:
		fmt.Fprintf(&b, "perf-check compares DAYS, not builds: BASE is %s, measured earlier (its runs started %s), "+
			"NEW is %d runs of this build now. A difference may be the machine's day rather than the build; "+
			"build the base and alternate the runs instead (ratelab perf-check without --against).",
			r.Base, measuredOn(r.Report.Base), len(r.Order))
	default:
		n := len(r.Order) / 2
		fmt.Fprintf(&b, "perf-check compares builds: BASE %s, NEW (head) %s; %d runs each, alternated "+
			"base, head, head, base, ... on one local cluster.", r.Base, r.Head, n)
	}
	fmt.Fprintf(&b, " Builds %s, runs %s, total %s.", round(r.Build), round(r.Runs), round(r.Total))
	return b.String()
}

// WriteText writes the headline, the comparison table and the runs whose SLO failed.
func (r *Result) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintln(w, r.Headline()+"\n"); err != nil {
		return err
	}
	if err := r.Report.WriteText(w); err != nil {
		return err
	}
	for _, f := range r.SLOFailures {
		if _, err := fmt.Fprintln(w, "note: SLO failed in "+f+" (reported; the comparison above is the verdict)"); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes the headline and the comparison as Markdown.
func (r *Result) WriteMarkdown(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "## ratelab perf-check\n\n%s\n\n", r.Headline()); err != nil {
		return err
	}
	if err := r.Report.WriteMarkdown(w); err != nil {
		return err
	}
	for _, f := range r.SLOFailures {
		if _, err := fmt.Fprintf(w, "\n> SLO failed in %s (reported; the comparison is the verdict)\n", f); err != nil {
			return err
		}
	}
	return nil
}

// writeMarkdownFile writes Out/compare.md.
func writeMarkdownFile(r *Result) error {
	f, err := os.Create(filepath.Join(r.Out, CompareFile))
	if err != nil {
		return fmt.Errorf("perf-check: %w", err)
	}
	werr := r.WriteMarkdown(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// sloFailures lists the runs of rep whose own SLO checks failed, as "head rep-03: p99_ms 1000
// (was 1200)"; a committed baseline's runs are not this gate's and are left out.
func sloFailures(rep *compare.Report, mode Mode) []string {
	sides := []*compare.Set{rep.Base, rep.New}
	if mode == Days {
		sides = sides[1:]
	}
	var out []string
	for _, side := range sides {
		for _, run := range side.Runs {
			s := run.Summary
			if s.SLO.Pass {
				continue
			}
			var failed []string
			for _, c := range s.SLO.Checks {
				if !c.Pass {
					failed = append(failed, fmt.Sprintf("%s %g (was %g)", c.Name, c.Limit, c.Value))
				}
			}
			name := filepath.Base(filepath.Dir(run.Dir)) + " " + filepath.Base(run.Dir)
			out = append(out, name+": "+strings.Join(failed, "; "))
		}
	}
	return out
}

// measuredOn is the dates a set's runs started: one date (time.DateOnly), or the first and the
// last joined by " to ".
func measuredOn(s *compare.Set) string {
	var first, last time.Time
	for _, r := range s.Runs {
		t := r.Summary.StartedAt
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	if first.IsZero() {
		return "date unknown"
	}
	a, b := first.UTC().Format(time.DateOnly), last.UTC().Format(time.DateOnly)
	if a == b {
		return a
	}
	return a + " to " + b
}

// round is d to the second, for the headline.
func round(d time.Duration) time.Duration { return d.Round(time.Second) }
