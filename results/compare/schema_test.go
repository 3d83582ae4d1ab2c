package compare

import (
	"errors"
	"math"
	"strings"
	"testing"

	"ratelab/results"
)

// asV1 makes writeReps write v1 summaries, as an older ratelab did.
func asV1(i int, s *results.Summary) { s.Schema = results.SchemaSummaryV1 }

func TestRefusesV1AgainstV2(t *testing.T) {
	t.Parallel()
	oldDir := writeReps(t, t.TempDir(), noisy(1, 6, 1, 0.1), asV1)
	newDir := writeReps(t, t.TempDir(), noisy(2, 6, 1, 0.1), nil)
	old, cur := load(t, oldDir), load(t, newDir)
	if old.Schema != results.SchemaSummaryV1 || cur.Schema != results.SchemaSummary {
		t.Fatalf("schemas %q, %q", old.Schema, cur.Schema)
	}
	_, err := Compare(old, cur, Options{})
	if !errors.Is(err, ErrSchemas) {
		t.Fatalf("Compare(v1, v2) = %v; want ErrSchemas", err)
	}
	for _, want := range []string{results.SchemaSummaryV1, results.SchemaSummary, oldDir, newDir, "rerun the BASE side with this ratelab"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if _, err := Compare(cur, old, Options{}); err == nil || !strings.Contains(err.Error(), "rerun the NEW side") {
		t.Errorf("Compare(v2, v1) = %v; want the NEW side named for a rerun", err)
	}
	// Two v1 sets compare by their own (old) definitions, and say so.
	rep, err := Compare(old, load(t, writeReps(t, t.TempDir(), noisy(3, 6, 1, 0.1), asV1)), Options{})
	if err != nil || !strings.Contains(strings.Join(rep.Notes, "\n"), results.V1Note) {
		t.Errorf("v1 against v1: %v, notes %q; want a comparison noting %q", err, rep.Notes, results.V1Note)
	}
}

func TestLoadRefusesMixedSchemas(t *testing.T) {
	t.Parallel()
	dir := writeReps(t, t.TempDir(), []float64{1, 2, 3}, func(i int, s *results.Summary) {
		if i == 1 {
			asV1(i, s)
		}
	})
	_, err := Load(dir)
	if !errors.Is(err, ErrSchemas) || !strings.Contains(err.Error(), "rep-01") || !strings.Contains(err.Error(), "rep-02") {
		t.Errorf("Load of mixed schemas = %v; want ErrSchemas naming rep-01 and rep-02", err)
	}
}

// A percentile that is not measurable is worse than any finite one: against a finite BASE it is
// a significant regression, and the tables say "not measurable".
func TestNotMeasurableIsARegression(t *testing.T) {
	t.Parallel()
	base := load(t, writeReps(t, t.TempDir(), noisy(4, 6, 1, 0.1), nil))
	dropping := load(t, writeReps(t, t.TempDir(), noisy(5, 6, 1, 0.1), func(i int, s *results.Summary) {
		s.LatencyMs.P999, s.LatencyMs.Max, s.LatencyMs.MeasurablePct = results.Unmeasurable, results.Unmeasurable, 99.5
	}))
	rep, err := Compare(base, dropping, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, rep, "p999_ms")
	if r.Verdict != Regression || !math.IsInf(r.NewMedian, 1) || !math.IsInf(r.Delta, 1) || r.P >= 0.05 {
		t.Errorf("p999 row %+v: want a significant regression to not measurable", r)
	}
	if v := row(t, rep, "p99_ms").Verdict; v == Regression {
		t.Errorf("p99 verdict %q: p99 stayed measurable and the same", v)
	}
	back, _ := Compare(dropping, base, Options{})
	if v := row(t, back, "p999_ms").Verdict; v != Improved {
		t.Errorf("measurable again: %q, want improved", v)
	}
	same, _ := Compare(dropping, dropping, Options{})
	if r := row(t, same, "p999_ms"); r.Verdict != NoChange || r.Delta != 0 {
		t.Errorf("not measurable on both sides: %+v, want no change", r)
	}
	var text, md strings.Builder
	rep.WriteText(&text)
	t.Logf("%s", text.String())
	rep.WriteMarkdown(&md)
	for _, out := range []string{text.String(), md.String()} {
		if !strings.Contains(out, "not measurable") || strings.Contains(out, "Inf") || strings.Contains(out, "NaN") {
			t.Errorf("output does not say \"not measurable\" (or prints Inf/NaN):\n%s", out)
		}
	}
}

func TestMediansWithInf(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, tt := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1, inf}, inf}, {[]float64{inf, inf}, inf}, {[]float64{1, 2, inf}, 2},
		{[]float64{1, inf, inf}, inf}, {[]float64{1, 2, 3, 4, 5, inf}, 3.5}, {[]float64{3, 1, 2}, 2},
	} {
		if have := median(tt.xs); have != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.xs, have, tt.want)
		}
	}
	lo, hi, _ := medianCI([]float64{1, 2, 3, 4, 5, inf}, 0.95)
	if lo != 1 || !math.IsInf(hi, 1) {
		t.Errorf("CI of {1..5, Inf} = [%v, %v], want [1, +Inf]", lo, hi)
	}
	if p := mannWhitneyP([]float64{1, 2, 3, 4, 5, 6}, []float64{inf, inf, inf, inf, inf, inf}); math.Abs(p-2.0/924) > 1e-12 {
		t.Errorf("U test of 6 finite against 6 not measurable: p = %v, want 2/C(12,6)", p)
	}
}
