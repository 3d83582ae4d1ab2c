package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// TestTokensBackLine: the text summary shows tokens back — range, keys, durability, the split
// by fault and the bound's verdict — and says nothing of it without an audit.
func TestTokensBackLine(t *testing.T) {
	t.Parallel()
	s := results.NewSummary("x", 1, time.Unix(0, 0))
	if l := tokensBackLine(s); l != "" {
		t.Errorf("without an audit: %q, want no line", l)
	}
	s.Environment.Durability = "wait"
	s.TokensBack = &results.TokensBack{Min: 12, Max: 30, Keys: 3, Bound: 25.5, Verdict: results.VerdictUndetermined,
		ByFault: map[string]int64{"partition hottest": 10, "none": 2}}
	var b bytes.Buffer
	if err := WriteText(&b, s, ""); err != nil {
		t.Fatal(err)
	}
	want := "12..30 tokens over 3 keys (durability wait); by fault: none 2, partition hottest 10; bound 25.5 tokens: undetermined"
	if !strings.Contains(b.String(), "tokens back   "+want) {
		t.Errorf("text summary:\n%s\nwant a line %q", b.String(), want)
	}
}
