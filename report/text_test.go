package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// TestWriteTextFaults: each fault line says what the generator saw: recovery counted from the
// injection, or from the end of a lasting fault; a fault detected and never recovered says so;
// a fault no decision noticed is not called "not recovered".
func TestWriteTextFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have results.Fault
		want string
	}{
		{"recovered", results.Fault{AtS: 10, Kind: "kill-primary", Target: "n1", DetectedS: 10, RecoveredS: 12.5},
			"kill-primary at 10.0 s on n1: detected at 10 s, recovered 2.5 s after"},
		{"lasting", results.Fault{AtS: 10, Kind: "pause", Target: "n1", DetectedS: 10, RecoveredS: 14, ForS: 3},
			"pause at 10.0 s on n1: detected at 10 s, recovered 1.0 s after it ended (lasted 3 s)"},
		{"never recovered", results.Fault{AtS: 10, Kind: "kill-primary", Target: "n1", DetectedS: 11},
			"kill-primary at 10.0 s on n1: detected at 11 s, not recovered"},
		{"unnoticed", results.Fault{AtS: 20, Kind: "restart", Target: "n1"},
			"restart at 20.0 s on n1: no errors seen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := results.NewSummary("x", 1, time.Unix(0, 0))
			s.Faults = []results.Fault{tc.have}
			var b bytes.Buffer
			if err := WriteText(&b, s, ""); err != nil {
				t.Fatal(err)
			}
			var line string
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.Contains(l, "fault ") {
					line = l
				}
			}
			if !strings.HasSuffix(line, tc.want) {
				t.Errorf("fault line = %q, want it to end with %q", line, tc.want)
			}
		})
	}
}

// TestWriteTextV2 checks the lines a v2 summary adds: latency over offered requests with where
// it stops being measurable, served latency beside it, the drops, overspend confirmed and
// possible, the burst excess against its bound, central and other ops, a FAILED fault and a check
// whose value is not measurable.
func TestWriteTextV2(t *testing.T) {
	t.Parallel()
	s := results.NewSummary("x", 1, time.Unix(0, 0))
	h := results.NewHistogram()
	for i := 1; i <= 980; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	s.LatencyMs, s.LatencyServedMs = results.LatencyOf(h, 20)
	s.LatencyClamped = 2
	s.Load = results.Load{Offered: 1000, Completed: 980, Late: 4, Sent: 980, Dropped: 20, DroppedInflight: 15, DroppedBehind: 5}
	s.Overspend = results.Overspend{Requests: 3, PossibleRequests: 5, Tokens: 3, PossibleTokens: 5, UnknownOutcomes: 2,
		FalseDenies: 1, PossibleFalseDenies: 4,
		BurstExcess: results.BurstExcess{Tokens: 7, WorstKey: "rl:{t1}:read", WorstTokens: 6},
		Bound:       results.Bound{Sources: map[string]float64{results.BoundLeases: 5}}}
	s.Overspend.JudgeBound()
	s.Central = results.Central{Ops: 900, OpsPerS: 90, OtherOps: 12}
	s.Faults = []results.Fault{{AtS: 3, Kind: "pause", Target: "n1", Failed: true, Error: "SIGSTOP: no such process"}}
	s.SLO = results.SLO{Checks: []results.Check{{Name: "p99_ms <=", Limit: 5, Value: float64(s.LatencyMs.P99)}}}
	var b bytes.Buffer
	if err := WriteText(&b, s, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"1000 offered, 980 decisions (4 late); dropped by generator 20 (2.00% of offered: 15 at max in flight, 5 behind schedule)",
		"p99 not measurable, p99.9 not measurable, max not measurable (over offered requests, from intended start; " +
			"not measurable above p98: 2.00% of the offered requests got no decision (dropped, or an error))",
		"served ms", "(decided requests only: allowed or denied, a fail policy's answer included; 2 clamped at 5 min)",
		"confirmed 3 (possible 5) requests", "3 (possible 5) tokens; 2 unknown outcomes",
		"confirmed 1 (possible 4), ratio",
		"worst key 6 tokens on rl:{t1}:read (all keys 7) vs bound 5 tokens (leases 5): within no",
		"900 decision ops, 90 ops/s; 12 other ops",
		"FAILED pause at 3.0 s on n1: SIGSTOP: no such process",
		"p99_ms <= 5: not measurable FAILED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Inf") || strings.Contains(out, "NaN") {
		t.Errorf("text prints Inf or NaN:\n%s", out)
	}
}

// TestWriteTextNothingDecided: a run in which no request got a decision (every connection
// refused) has no served latency; its all-zero percentiles must not print as instant answers.
func TestWriteTextNothingDecided(t *testing.T) {
	t.Parallel()
	s := results.NewSummary("x", 1, time.Unix(0, 0))
	s.LatencyMs, s.LatencyServedMs = results.LatencyOf(results.NewHistogram(), 100)
	s.Load = results.Load{Offered: 100, Completed: 100, Sent: 100}
	var b bytes.Buffer
	if err := WriteText(&b, s, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "served ms     none: no request was decided") {
		t.Errorf("text lacks the served row's none:\n%s", out)
	}
	if strings.Contains(out, "p50 0.000") {
		t.Errorf("text prints a zero percentile for nothing decided:\n%s", out)
	}
}

// A summary read from a v1 file says so, and shows v1's figures by v1's names.
func TestWriteTextV1(t *testing.T) {
	t.Parallel()
	s := results.NewSummary("x", 1, time.Unix(0, 0))
	s.Schema = results.SchemaSummaryV1
	s.LatencyServedMs = results.ServedLatency{P50: 1, P90: 2, P99: 3, P999: 4, Max: 5}
	s.Overspend.Bound.Tokens = 40
	s.Central.Ops = 10
	path := filepath.Join(t.TempDir(), results.SummaryFile)
	if err := results.WriteSummary(path, s); err != nil {
		t.Fatal(err)
	}
	back, err := results.ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, back, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"NOTE", results.V1Note, "p99 3.000", "(answered requests only, from intended start)",
		"v1 overspend bound 40.0 tokens (whole run)", "10 Redis ops, 0 ops/s (v1: every command)"} {
		if !strings.Contains(out, want) {
			t.Errorf("v1 text lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"not measurable", "burst excess", "possible"} {
		if strings.Contains(out, bad) {
			t.Errorf("v1 text says %q, a v2 figure:\n%s", bad, out)
		}
	}
}

// TestWriteTextNamesWhoseLimit: a run below its schedule says whether the generator fell behind
// or the limiter was slower (load.limit), not one warning for both.
func TestWriteTextNamesWhoseLimit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit results.Limit
		want  string
	}{
		{results.LimitGenerator, "offered rate not reached (the generator fell behind)"},
		{results.LimitLimiter, "offered rate not reached (the limiter was slower)"},
	} {
		s := results.NewSummary("x", 1, time.Unix(0, 0))
		s.Load.Limit, s.Load.GeneratorLimited = c.limit, c.limit == results.LimitGenerator
		s.Load.AddNote(results.NoteLoad, "achieved 10 of 20 requests/s offered")
		var b strings.Builder
		if err := WriteText(&b, s, ""); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("limit %s: text lacks %q:\n%s", c.limit, c.want, b.String())
		}
	}
}
