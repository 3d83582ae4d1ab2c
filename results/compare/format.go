package compare

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// header is the table's column names, shared by the text and Markdown forms.
var header = []string{"metric", "BASE median", "NEW median", "delta", "p (n)", "threshold", "verdict"}

// cells renders one row's columns.
func (row Row) cells() []string {
	m := row.Metric
	if row.Verdict == NotMeasured {
		return []string{m.Name + unitSuffix(m.Unit), "—", "—", "—", fmt.Sprintf("— (%d+%d)", len(row.Base), len(row.New)), row.threshold(), string(row.Verdict)}
	}
	return []string{
		m.Name + unitSuffix(m.Unit),
		withCI(row.BaseMedian, row.BaseLo, row.BaseHi),
		withCI(row.NewMedian, row.NewLo, row.NewHi),
		row.delta(),
		fmt.Sprintf("%.3f (%d+%d)", row.P, len(row.Base), len(row.New)),
		row.threshold(),
		string(row.Verdict),
	}
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " (" + u + ")"
}

// withCI is a median and its confidence interval, or "not measurable" alone.
func withCI(center, lo, hi float64) string {
	if math.IsInf(center, 1) {
		return notMeasurable
	}
	return num(center) + " " + ciPct(center, lo, hi)
}

// notMeasurable is printed for a latency median that fell among the dropped requests.
const notMeasurable = "not measurable"

// delta is the change of the medians: a percentage, or an absolute amount for metrics judged by an
// absolute threshold (a ratio near zero) and when BASE is 0; "not measurable" when either median
// is.
func (row Row) delta() string {
	if math.IsInf(row.BaseMedian, 1) || math.IsInf(row.NewMedian, 1) {
		return notMeasurable
	}
	if !row.Threshold.Relative || math.IsNaN(row.DeltaPct) {
		return signed(row.Delta)
	}
	return fmt.Sprintf("%+.1f%%", row.DeltaPct)
}

// threshold shows the threshold with its worse direction: +10% for latency, -5% for the rate.
func (row Row) threshold() string {
	sign := "+"
	if !row.Metric.HigherIsWorse {
		sign = "-"
	}
	return sign + row.Threshold.String()
}

// num formats a value with 4 significant digits, +Inf as "not measurable".
func num(v float64) string {
	if math.IsInf(v, 1) {
		return notMeasurable
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// signed formats an absolute delta with its sign.
func signed(v float64) string {
	if v == 0 {
		return "0"
	}
	s := strconv.FormatFloat(v, 'g', 3, 64)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// ciPct is the confidence interval as ± its largest distance from the median in percent (as
// benchstat prints it); ±∞ when the runs are too few for an interval or its upper end is not
// measurable; the interval itself around a zero median.
func ciPct(center, lo, hi float64) string {
	switch {
	case math.IsInf(lo, 0) || math.IsInf(hi, 0):
		return "±∞"
	case center == 0 && lo == 0 && hi == 0:
		return "±0%"
	case center == 0 || math.Signbit(lo) != math.Signbit(center) || math.Signbit(hi) != math.Signbit(center):
		// No percentage of zero: the interval itself.
		return "[" + num(lo) + ", " + num(hi) + "]"
	}
	v := math.Max(hi/center-1, 1-lo/center)
	return fmt.Sprintf("±%.0f%%", 100*v)
}

// title describes the two sets.
func (r *Report) title() string {
	desc := func(s *Set) string {
		return fmt.Sprintf("%s (%d runs of %s)", strings.Join(s.Paths, " "), len(s.Runs), strings.Join(s.Scenarios(), ","))
	}
	return "BASE " + desc(r.Base) + "\nNEW  " + desc(r.New)
}

// conclusion is the one-line result.
func (r *Report) conclusion() string {
	if regs := r.Regressions(); len(regs) > 0 {
		return fmt.Sprintf("FAIL: significant regression beyond threshold in %s", strings.Join(regs, ", "))
	}
	if r.NoVerdict {
		return fmt.Sprintf("NO VERDICT: %d and %d runs; a verdict needs at least %d runs in one set", len(r.Base.Runs), len(r.New.Runs), r.MinRuns)
	}
	return "PASS: no significant regression beyond a threshold"
}

// legend explains the columns once.
func (r *Report) legend() string {
	return fmt.Sprintf("medians over runs, ± the %g%% confidence interval; p: Mann-Whitney U test, two-sided, significant below %g; "+
		"a regression is significant AND worse than its threshold",
		100*r.Options.Confidence, r.Options.Alpha)
}

// WriteText writes the comparison as an aligned table.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString(r.title() + "\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range r.Rows {
		fmt.Fprintln(tw, strings.Join(row.cells(), "\t"))
	}
	tw.Flush()
	b.WriteString("\n" + r.legend() + "\n")
	for _, n := range r.Notes {
		b.WriteString("note: " + n + "\n")
	}
	b.WriteString(r.conclusion() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the comparison as a Markdown table, for a CI job summary or a PR comment.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("### ratelab compare: " + r.conclusion() + "\n\n")
	for _, line := range strings.Split(r.title(), "\n") {
		b.WriteString("- " + strings.TrimSpace(line) + "\n")
	}
	b.WriteString("\n| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		c := row.cells()
		if row.Verdict == Regression {
			c[len(c)-1] = "**" + c[len(c)-1] + "**"
		}
		b.WriteString("| " + strings.Join(c, " | ") + " |\n")
	}
	b.WriteString("\n" + r.legend() + "\n")
	for _, n := range r.Notes {
		b.WriteString("\n> " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
