package report

import (
	"math"
	"strconv"
	"strings"
	"time"

	"ratelab/results"
)

// Number formats shared by the HTML and Markdown reports. They depend only on their input, so
// the reports are byte-for-byte reproducible (the golden tests rely on it).

// fmtInt formats a count with thousands separators: 1119280 -> "1,119,280".
func fmtInt(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtFixed formats v with prec decimals and thousands separators: (18500.5, 1) -> "18,500.5".
func fmtFixed(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	whole, frac, hasFrac := strings.Cut(s, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil { // beyond int64: leave it unseparated
		return s
	}
	out := fmtInt(n)
	if n == 0 && strings.HasPrefix(whole, "-") {
		out = "-0"
	}
	if hasFrac {
		out += "." + frac
	}
	return out
}

// fmtRate formats a rate in requests or operations per second, to 0.1/s.
func fmtRate(v float64) string { return fmtFixed(v, 1) }

// fmtMs formats a latency in milliseconds to the microsecond, the histogram's unit.
func fmtMs(v float64) string { return fmtFixed(v, 3) }

// notMeasurable is printed for a latency percentile that fell among the dropped requests.
const notMeasurable = "not measurable"

// fmtLatency formats a latency over offered requests: fmtMs, or "not measurable".
func fmtLatency(m results.Ms) string {
	if !m.Measurable() {
		return notMeasurable
	}
	return fmtMs(float64(m))
}

// fmtPercentile names the percentile pct as "p98.5": rounded down to 0.01, so that a
// percentile it names as measurable is measurable (p98.996 reads p98.99, not p99).
func fmtPercentile(pct float64) string {
	s := strconv.FormatFloat(math.Floor(pct*100)/100, 'f', 2, 64)
	return "p" + strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// fmtWithin says whether the worst key kept the bound: "yes", "no", or "none" when no bound
// applies.
func fmtWithin(within *bool) string {
	switch {
	case within == nil:
		return "none"
	case *within:
		return "yes"
	}
	return "no"
}

// fmtPct formats a ratio as a percentage with 4 decimals: 0.0013333 -> "0.1333%".
func fmtPct(ratio float64) string { return strconv.FormatFloat(ratio*100, 'f', 4, 64) + "%" }

// fmtShare formats a share of a whole as a percentage with 2 decimals: 0.31 -> "31.00%".
func fmtShare(ratio float64) string { return strconv.FormatFloat(ratio*100, 'f', 2, 64) + "%" }

// fmtFloat formats a value of unknown scale (SLO limits and values, bounds): whole numbers with
// separators, others with 6 significant digits; +Inf, a check's value that is not measurable,
// as "not measurable".
func fmtFloat(v float64) string {
	if math.IsInf(v, 1) {
		return notMeasurable
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmtInt(int64(v))
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// fmtTokens formats a number of tokens to a thousandth: the envelope's sums of fractional
// refills leave residues of 1e-14 tokens that are float rounding, not an excess to read.
func fmtTokens(v float64) string { return fmtFloat(math.Round(v*1000) / 1000) }

// fmtOptFloat is fmtFloat of *p, or not measurable for nil.
func fmtOptFloat(p *float64) string {
	if p == nil {
		return notMeasurable
	}
	return fmtFloat(*p)
}

// fmtSeconds formats a duration given in seconds to the millisecond, trailing zeros trimmed:
// 60.5 -> "60.5 s".
func fmtSeconds(v float64) string { return fmtSec(v) + " s" }

// fmtSec formats seconds to the millisecond without the unit, for table columns whose header
// names it: 9.1 -> "9.1", 10 -> "10".
func fmtSec(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// fmtSecOrDash is fmtSec, or an em dash for 0: the summary's "not observed" for a fault's
// detection and recovery times.
func fmtSecOrDash(v float64) string {
	if v == 0 {
		return "—"
	}
	return fmtSec(v)
}

// fmtTime formats the run's start in UTC, to the second.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
