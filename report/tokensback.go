package report

import (
	"fmt"
	"sort"
	"strings"

	"ratelab/results"
)

// tokensBackLine is the summary's tokens back in one line — the range, the keys, the split by
// fault, the bound and whether the range kept it, and the durability — or "" when the run did
// not audit its buckets.
func tokensBackLine(s *results.Summary) string {
	tb := s.TokensBack
	if tb == nil {
		return ""
	}
	d := s.Environment.Durability
	if d == "" {
		d = "async"
	}
	line := fmt.Sprintf("%d..%d tokens over %d keys (durability %s)", tb.Min, tb.Max, tb.Keys, d)
	if len(tb.ByFault) > 0 {
		names := make([]string, 0, len(tb.ByFault))
		for n := range tb.ByFault {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s %d", n, tb.ByFault[n])
		}
		line += "; by fault: " + strings.Join(parts, ", ")
	}
	line += fmt.Sprintf("; bound %s tokens: %s", fmtFloat(tb.Bound), tb.Verdict)
	return line
}
