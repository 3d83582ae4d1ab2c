package scenarios

import (
	"math"
	"strings"
	"testing"
	"time"

	"ratelab/results"
	"ratelab/workload"
)

const stagesYAML = `
name: t
load:
  rate: 100
  stages:
    - {to: 5000, over: 30s}
    - {to: 100000, over: 60s}
    - {hold: 30s}
tenants: {count: 10}
policy: {rate: 10, burst: 20}
`

func TestStagesParseAndDefaultTheDuration(t *testing.T) {
	t.Parallel()
	s, err := Parse("x.yaml", []byte(stagesYAML))
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(s.Duration); got != 2*time.Minute {
		t.Errorf("duration %v, want the stages' total 2m0s", got)
	}
	if got := FormatStages(s.Load.Stages); got != "5000@30s,100000@1m0s,hold@30s" {
		t.Errorf("stages %s", got)
	}
	want := []workload.Stage{{To: 5000, Over: 30 * time.Second}, {To: 100000, Over: time.Minute}, {To: 100000, Over: 30 * time.Second}}
	if have := WorkloadStages(s.Load.Rate, s.Load.Stages); len(have) != 3 || have[0] != want[0] || have[1] != want[1] || have[2] != want[2] {
		t.Errorf("workload stages %v, want %v (a hold keeps the last rate)", have, want)
	}
	if got := s.Load.PeakRate(); got != 100000 {
		t.Errorf("peak %v", got)
	}
	p, err := s.Profile()
	if err != nil {
		t.Fatal(err)
	}
	// 100 -> 5000 over 30 s, 5000 -> 100000 over 60 s, 30 s at 100000.
	if have, want := p.Total(), (100+5000)/2.0*30+(5000+100000)/2.0*60+100000*30; have != want {
		t.Errorf("profile total %v, want %v", have, want)
	}
	again, err := Parse("resolved", s.YAML())
	if err != nil || string(again.YAML()) != string(s.YAML()) {
		t.Errorf("resolved spec does not round-trip (%v):\n%s", err, s.YAML())
	}
	// An explicit duration wins: shorter cuts the stages, longer holds the last rate.
	cut, err := Parse("x.yaml", []byte(stagesYAML+"duration: 10s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := cut.Profile(); p.Duration() != 10*time.Second || p.Rate(9*time.Second) >= 5000 {
		t.Errorf("cut profile lasts %v, rate at 9 s %v: want 10 s, still ramping to 5000", p.Duration(), p.Rate(9*time.Second))
	}
	none, err := Parse("x.yaml", []byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := none.Profile(); p != nil || err != nil {
		t.Errorf("a spec without stages has profile %v, %v; want none", p, err)
	}
}

func TestStagesValidation(t *testing.T) {
	t.Parallel()
	base := "name: t\ntenants: {count: 10}\npolicy: {rate: 10, burst: 20}\n"
	tests := []struct {
		name, load string
		want       []string
	}{
		{"both forms", "{stages: [{to: 5, over: 1s, hold: 2s}]}", []string{"load.stages[0]: {to: 5, over: 1s, hold: 2s}: is a ramp {to, over} or a hold {hold}, not both"}},
		{"empty stage", "{stages: [{to: 5, over: 1s}, {}]}", []string{"load.stages[1]: {}: write a ramp"}},
		{"missing over", "{stages: [{to: 5000}]}", []string{"load.stages[0].over: missing: say how long the ramp to 5000 requests/s takes"}},
		{"missing to", "{stages: [{over: 10s}]}", []string{"load.stages[0].to: missing"}},
		{"negative over", "{stages: [{to: 5, over: 2s}, {to: 5, over: -1s}]}", []string{"load.stages[1].over: -1s: must be >= 0"}},
		{"zero hold", "{stages: [{to: 5, over: 2s}, {hold: 0s}]}", []string{"load.stages[1].hold: 0s: must be > 0"}},
		{"rate too high", "{stages: [{to: 2e7, over: 2s}]}", []string{"load.stages[0].to: 2e+07: must be between 0 and 10000000"}},
		{"negative rate", "{stages: [{to: -3, over: 2s}]}", []string{"load.stages[0].to: -3: must be between 0"}},
		{"negative start", "{rate: -1, stages: [{to: 3, over: 2s}]}", []string{"load.rate: -1: with load.stages it is the start rate"}},
		{"all zero", "{stages: [{to: 0, over: 2s}]}", []string{"load.stages: 0@2s: every rate is 0"}},
		{"no length", "{rate: 5, stages: [{to: 50, over: 0s}]}", []string{"load.stages: 50@0s: last 0s in all"}},
		{"too short", "{stages: [{to: 50, over: 500ms}]}", []string{"duration: 500ms: must be at least 1s"}},
		{"via http", "{stages: [{to: 50, over: 2s}]}\nvia: http", []string{"load.stages: 50@2s: via: http does not follow load stages"}},
	}
	for _, tt := range tests {
		_, err := Parse("x.yaml", []byte(base+"load: "+tt.load+"\n"))
		if err == nil {
			t.Errorf("%s: parsed; want %q", tt.name, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error\n%v\nwant it to contain %q", tt.name, err, w)
			}
		}
	}
	// A start rate of 0 is the default with stages; a step (over: 0s) is a ramp of no length.
	ok := base + "load: {stages: [{to: 500, over: 0s}, {hold: 2s}]}\n"
	if _, err := Parse("x.yaml", []byte(ok)); err != nil {
		t.Errorf("a step then a hold from rate 0: %v", err)
	}
}

func TestParseStages(t *testing.T) {
	t.Parallel()
	have, err := ParseStages(" 5000@30s, 100000@60s ,hold@30s,0.5@0s")
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatStages(have); got != "5000@30s,100000@1m0s,hold@30s,0.5@0s" {
		t.Errorf("parsed %s", got)
	}
	for _, bad := range []struct{ in, want string }{
		{"", "no stages"},
		{"5000", `stage 1 "5000": write TO@OVER`},
		{"5000@30s,fast@10s", `stage 2 "fast@10s": "fast" is not a rate`},
		{"5000@soon", `"soon" is not a duration`},
	} {
		if _, err := ParseStages(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseStages(%q) = %v, want an error containing %q", bad.in, err, bad.want)
		}
	}
	s, err := Parse("x.yaml", []byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetStages("2000@5s,hold@5s"); err != nil {
		t.Fatal(err)
	}
	if time.Duration(s.Duration) != 10*time.Second || len(s.Load.Stages) != 2 {
		t.Errorf("after SetStages: duration %v, stages %v; want 10s and the two stages", time.Duration(s.Duration), s.Load.Stages)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("SetStages left an invalid spec: %v", err)
	}
}

// row is a second with offered requests, all answered unless dropped, and the given outcomes.
func row(ts float64, offered, dropped int64, mod func(*results.Interval)) *results.Interval {
	r := &results.Interval{TS: ts, Offered: offered, Sent: offered - dropped, Dropped: dropped, Allowed: offered - dropped}
	if mod != nil {
		mod(r)
	}
	return r
}

func TestFirstFailures(t *testing.T) {
	t.Parallel()
	p99, achieved, over, growth := 5.0, 0.99, 0.01, 0.1
	slo := SLO{P99Ms: &p99, AchievedRatio: &achieved, OverspendRatio: &over, HeapGrowth: &growth}
	f := slo.NewFirstFailures()
	fast, slow := results.NewHistogram(), results.NewHistogram()
	for range 1000 {
		fast.Record(time.Millisecond)
		slow.Record(time.Millisecond)
	}
	for range 50 {
		slow.Record(20 * time.Millisecond)
	}
	add := func(r *results.Interval, h *results.Histogram) { f.Add(NewSecond(r, h)) }
	add(row(0, 1000, 0, nil), fast)
	add(row(1, 1000, 0, func(r *results.Interval) { r.Overspend = 20 }), fast)  // overspend 2%
	add(row(2, 1050, 0, nil), slow)                                             // p99 20 ms
	add(row(3, 1100, 50, nil), fast)                                            // 4.5% dropped: p99 not measurable, achieved 95.5%
	add(row(4, 0, 0, nil), results.NewHistogram())                              // nothing to judge
	add(row(5, 1200, 0, func(r *results.Interval) { r.Overspend = 100 }), fast) // overspend again
	got := f.Result()
	if strings.Join(got.Checked, ",") != "p99_ms,overspend_ratio,achieved_ratio" {
		t.Errorf("checked %v: want the per-second checks in the SLO's order (heap_growth has none)", got.Checked)
	}
	want := map[string]struct {
		at, offered float64
		measurable  bool
		n           int
	}{
		"overspend_ratio": {1, 1000, true, 2},
		"p99_ms":          {2, 1050, true, 2},
		"achieved_ratio":  {3, 1100, true, 1},
	}
	if len(got.FirstFailure) != len(want) {
		t.Fatalf("first failures %+v, want %d", got.FirstFailure, len(want))
	}
	for _, ff := range got.FirstFailure {
		w, ok := want[ff.Check]
		if !ok || ff.AtS != w.at || ff.OfferedRPS != w.offered || (ff.Value != nil) != w.measurable || ff.FailedSeconds != w.n {
			t.Errorf("%s first failed at %v s, %v offered, value %v, %d seconds; want %+v", ff.Check, ff.AtS, ff.OfferedRPS, ff.Value, ff.FailedSeconds, w)
		}
	}
	if got.PeakOfferedRPS != 1200 {
		t.Errorf("peak %v", got.PeakOfferedRPS)
	}
	// The second that dropped 4.5% of its requests has no measurable offered p99.
	if s := NewSecond(row(3, 1100, 50, nil), fast); !math.IsInf(float64(s.Latency.P99), 1) {
		t.Errorf("p99 of a second that dropped 4.5%% = %v, want not measurable", s.Latency.P99)
	}
	for _, k := range []string{"recovered_s", "rss_growth", "heap_growth", "goroutine_growth"} {
		if HasSecondCheck(k) {
			t.Errorf("%s has a per-second counterpart; it judges the whole run", k)
		}
	}
}

// FuzzParseStages: any --stages string is parsed or refused without panicking, and what parses
// is written back by FormatStages in a form that parses to the same stages.
func FuzzParseStages(f *testing.F) {
	for _, s := range []string{"5000@30s,100000@60s,hold@30s", "0.5@0s", "hold@1h", "@", ",", "1e309@1s", "NaN@1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		st, err := ParseStages(in)
		if err != nil {
			return
		}
		again, err := ParseStages(FormatStages(st))
		if err != nil {
			t.Fatalf("%q parsed to %s, which does not parse: %v", in, FormatStages(st), err)
		}
		if FormatStages(again) != FormatStages(st) {
			t.Fatalf("%q: %s then %s", in, FormatStages(st), FormatStages(again))
		}
	})
}
