package scenarios

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"ratelab/workload"
)

// MaxRate is the most requests per second one generator is asked to offer: load.rate and every
// stage's to. It is workload's bound, so a load that validates is a profile workload accepts.
const MaxRate = workload.MaxRampRate

// Stage is one step of load.stages, which ramps the arrival rate as k6's ramping-arrival-rate
// executor does: a ramp {to, over} moves the rate linearly from where the previous step left it
// (load.rate for the first) to To over Over, 0s being a step; a hold {hold} keeps the rate.
// Exactly one of To+Over or Hold is set.
type Stage struct {
	// To is the rate in requests per second at the ramp's end, 0..MaxRate.
	To *float64 `yaml:"to,omitempty"`
	// Over is how long the ramp takes, >= 0 (0s: a step to To).
	Over *Duration `yaml:"over,omitempty"`
	// Hold keeps the previous rate this long, > 0.
	Hold *Duration `yaml:"hold,omitempty"`
}

// Ramp returns the stage {to: rate, over: d}.
func Ramp(rate float64, d time.Duration) Stage {
	o := Duration(d)
	return Stage{To: &rate, Over: &o}
}

// Hold returns the stage {hold: d}.
func Hold(d time.Duration) Stage {
	h := Duration(d)
	return Stage{Hold: &h}
}

// length is how long the stage lasts (0 for a stage that is neither form).
func (st Stage) length() time.Duration {
	switch {
	case st.Hold != nil:
		return time.Duration(*st.Hold)
	case st.Over != nil:
		return time.Duration(*st.Over)
	}
	return 0
}

// String is the stage in the --stages form: TO@OVER or hold@D.
func (st Stage) String() string {
	switch {
	case st.Hold != nil:
		return "hold@" + time.Duration(*st.Hold).String()
	case st.To != nil && st.Over != nil:
		return strconv.FormatFloat(*st.To, 'f', -1, 64) + "@" + time.Duration(*st.Over).String()
	}
	return "?"
}

// FormatStages writes stages in the --stages form, e.g. "5000@30s,100000@1m0s,hold@30s".
func FormatStages(stages []Stage) string {
	parts := make([]string, len(stages))
	for i, st := range stages {
		parts[i] = st.String()
	}
	return strings.Join(parts, ",")
}

// ParseStages reads the --stages form: comma-separated steps, each TO@OVER (ramp to TO requests
// per second over the duration OVER; 0s is a step) or hold@D (keep the rate for D), e.g.
// "5000@30s,100000@60s,hold@30s". It checks the syntax; Spec.Validate checks the values.
func ParseStages(s string) ([]Stage, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--stages %q: no stages; write e.g. 5000@30s,100000@60s,hold@30s (TO@OVER ramps to TO requests/s, hold@D keeps the rate)", s)
	}
	var out []Stage
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		what, dur, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("--stages: stage %d %q: write TO@OVER (e.g. 5000@30s) or hold@D (e.g. hold@30s)", i+1, item)
		}
		d, err := time.ParseDuration(strings.TrimSpace(dur))
		if err != nil {
			return nil, fmt.Errorf("--stages: stage %d %q: %q is not a duration; write it like 30s, 1m30s or 250ms", i+1, item, dur)
		}
		if what = strings.TrimSpace(what); what == "hold" {
			out = append(out, Hold(d))
			continue
		}
		rate, err := strconv.ParseFloat(what, 64)
		if err != nil {
			return nil, fmt.Errorf("--stages: stage %d %q: %q is not a rate; write requests/s as a number (5000) or hold", i+1, item, what)
		}
		out = append(out, Ramp(rate, d))
	}
	return out, nil
}

// SetStages applies --stages over the scenario: its load follows the parsed stages, and the
// run lasts their total (a --duration applied after it cuts or extends them).
func (s *Spec) SetStages(flag string) error {
	st, err := ParseStages(flag)
	if err != nil {
		return err
	}
	s.Load.Stages = st
	s.Duration = Duration(StagesDuration(st))
	return nil
}

// StagesDuration is the stages' total length.
func StagesDuration(stages []Stage) time.Duration {
	var d time.Duration
	for _, st := range stages {
		d += st.length()
	}
	return d
}

// WorkloadStages translates stages that start at rate start into workload's form, a hold being
// a ramp to the rate it holds. Call it on validated stages.
func WorkloadStages(start float64, stages []Stage) []workload.Stage {
	out := make([]workload.Stage, len(stages))
	rate := start
	for i, st := range stages {
		if st.To != nil {
			rate = *st.To
		}
		out[i] = workload.Stage{To: rate, Over: st.length()}
	}
	return out
}

// Profile is the arrival rate of a scenario with load.stages over its duration (nil without
// stages): load.rate at the start, then the stages; a duration longer than the stages holds the
// last rate, a shorter one cuts them.
func (s *Spec) Profile() (*workload.Profile, error) {
	if len(s.Load.Stages) == 0 {
		return nil, nil
	}
	p, err := workload.NewProfile(s.Load.Rate, WorkloadStages(s.Load.Rate, s.Load.Stages), time.Duration(s.Duration))
	if err != nil {
		return nil, fmt.Errorf("load.stages: %w", err)
	}
	return p, nil
}

// PeakRate is the highest rate the load reaches: load.rate, or with stages the highest of it and
// every stage's to.
func (l *Load) PeakRate() float64 {
	peak := l.Rate
	for _, st := range l.Stages {
		if st.To != nil {
			peak = max(peak, *st.To)
		}
	}
	return peak
}

// validRate reports whether v is a rate in [0, MaxRate].
func validRate(v float64) bool { return v >= 0 && v <= MaxRate && !math.IsNaN(v) }

// validateStages checks load.stages: each step is a ramp or a hold with valid values, they last
// more than 0 in all, some rate is > 0, and the run's path follows them.
func (s *Spec) validateStages(bad badFunc) {
	l := s.Load
	if len(l.Stages) == 0 {
		return
	}
	if !validRate(l.Rate) {
		bad("load.rate", l.Rate, fmt.Sprintf("with load.stages it is the start rate: must be between 0 and %.0f requests per second", MaxRate))
	}
	for i, st := range l.Stages {
		s.validateStage(bad, i, st)
	}
	if total := StagesDuration(l.Stages); total <= 0 {
		bad("load.stages", FormatStages(l.Stages), "last 0s in all: give a ramp an over > 0 or add a hold, e.g. {hold: 30s}")
	}
	if l.PeakRate() <= 0 {
		bad("load.stages", FormatStages(l.Stages), "every rate is 0, so no request would be sent: ramp to a rate > 0, e.g. {to: 5000, over: 30s}")
	}
	if s.Trace != nil {
		bad("load.stages", FormatStages(l.Stages), "a replay takes its timing from the trace: drop load.stages or trace")
	}
	if s.Via == ViaHTTP {
		bad("load.stages", FormatStages(l.Stages), "via: http does not follow load stages: use via: process")
	}
}

// validateStage checks one step of load.stages.
func (s *Spec) validateStage(bad badFunc, i int, st Stage) {
	f := fmt.Sprintf("load.stages[%d]", i)
	switch {
	case st.Hold != nil && (st.To != nil || st.Over != nil):
		bad(f, "{"+describeStage(st)+"}", "is a ramp {to, over} or a hold {hold}, not both: split it into two stages")
		return
	case st.Hold != nil:
		if *st.Hold <= 0 {
			bad(f+".hold", time.Duration(*st.Hold), "must be > 0, e.g. hold: 30s (drop the stage to hold nothing)")
		}
		return
	case st.To == nil && st.Over == nil:
		bad(f, "{}", "write a ramp {to: 5000, over: 30s} or a hold {hold: 30s}")
		return
	case st.Over == nil:
		bad(f+".over", "missing", fmt.Sprintf("say how long the ramp to %v requests/s takes, e.g. over: 30s (0s for a step)", *st.To))
	case *st.Over < 0:
		bad(f+".over", time.Duration(*st.Over), "must be >= 0 (0s is a step)")
	}
	if st.To == nil {
		bad(f+".to", "missing", "say the rate in requests/s the ramp reaches, e.g. to: 5000")
	} else if !validRate(*st.To) {
		bad(f+".to", *st.To, fmt.Sprintf("must be between 0 and %.0f requests per second", MaxRate))
	}
}

// describeStage lists the keys a stage has, for an error message.
func describeStage(st Stage) string {
	var keys []string
	if st.To != nil {
		keys = append(keys, "to: "+strconv.FormatFloat(*st.To, 'f', -1, 64))
	}
	if st.Over != nil {
		keys = append(keys, "over: "+time.Duration(*st.Over).String())
	}
	if st.Hold != nil {
		keys = append(keys, "hold: "+time.Duration(*st.Hold).String())
	}
	return strings.Join(keys, ", ")
}
