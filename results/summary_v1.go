package results

import "time"

// A "ratelab.summary/v1" file is read into the v2 Summary and written back in its own layout, so
// that a v1 run stays v1 however often it is read and rewritten (a merge of v1 parts, a
// repetition's summary rewritten by the CLI): a v1 file never claims the v2 definitions.
//
// The mapping says what v1 measured, no more:
//   - v1's latency_ms was over the answered requests only: it becomes LatencyServedMs, and
//     LatencyMs carries the same values (v1 did not count the drops, so MeasurablePct and
//     Dropped stay 0);
//   - v1's overspend.bound_tokens bounded the whole run's overspend: it becomes Bound.Tokens with
//     Sources {BoundV1: x}, and Within stays nil (v1 judged no burst excess); a bound of 0 was v1's
//     "no bound applies", so it maps to no part;
//   - v1's central.ops counted every command: it stays in Central.Ops;
//   - every field v1 did not have (load.offered, the possible_* ranges, burst_excess, other_ops,
//     latency_clamped...) stays 0.

// summaryV1 is the layout of a v1 summary.json: the fields v1 wrote, under v1's names, in v1's
// order.
type summaryV1 struct {
	Schema      string        `json:"schema"`
	Scenario    string        `json:"scenario"`
	Seed        int64         `json:"seed"`
	StartedAt   time.Time     `json:"started_at"`
	DurationS   float64       `json:"duration_s"`
	Interrupted bool          `json:"interrupted"`
	Environment Environment   `json:"environment"`
	Load        loadV1        `json:"load"`
	Outcomes    Outcomes      `json:"outcomes"`
	Errors      errorsV1      `json:"errors"`
	LatencyMs   ServedLatency `json:"latency_ms"`
	Overspend   overspendV1   `json:"overspend"`
	Central     centralV1     `json:"central"`
	HotKeys     []HotKey      `json:"hot_keys"`
	Nodes       []NodeStats   `json:"nodes"`
	Process     Process       `json:"process"`
	Faults      []Fault       `json:"faults"`
	SLO         SLO           `json:"slo"`
	Part        *Part         `json:"part,omitempty"`
}

// loadV1 is v1's load object: Load without offered, late, the drops' causes and lost seconds.
type loadV1 struct {
	OfferedRPS       float64 `json:"offered_rps"`
	AchievedRPS      float64 `json:"achieved_rps"`
	Completed        int64   `json:"decisions"`
	Sent             int64   `json:"sent"`
	Dropped          int64   `json:"dropped"`
	MaxInflight      int     `json:"max_inflight"`
	Concurrency      int     `json:"concurrency"`
	GeneratorLimited bool    `json:"generator_limited"`
	ScheduleLagP99Ms float64 `json:"schedule_lag_p99_ms"`
	Note             string  `json:"note"`
}

// errorsV1 is v1's errors object: Errors without unreplicated (v1 had no WAIT).
type errorsV1 struct {
	Timeout     int64 `json:"timeout"`
	Moved       int64 `json:"moved"`
	Ask         int64 `json:"ask"`
	TryAgain    int64 `json:"tryagain"`
	ClusterDown int64 `json:"clusterdown"`
	NoScript    int64 `json:"noscript"`
	Conn        int64 `json:"conn"`
	Other       int64 `json:"other"`
}

// overspendV1 is v1's overspend object: one figure per quantity, bound_tokens for the run.
type overspendV1 struct {
	Requests        int64            `json:"requests"`
	Tokens          int64            `json:"tokens"`
	Ratio           float64          `json:"ratio"`
	FalseDenies     int64            `json:"false_denies"`
	FalseDenyRatio  float64          `json:"false_deny_ratio"`
	BoundTokens     float64          `json:"bound_tokens"`
	UnknownOutcomes int64            `json:"unknown_outcomes"`
	ByCause         map[string]int64 `json:"by_cause"`
}

// centralV1 is v1's central object: every command the nodes received.
type centralV1 struct {
	Ops     int64   `json:"ops"`
	OpsPerS float64 `json:"ops_per_s"`
}

// fromV1 maps a v1 file into a Summary whose Schema stays SchemaSummaryV1.
func fromV1(v *summaryV1) *Summary {
	s := &Summary{
		Schema: SchemaSummaryV1, Scenario: v.Scenario, Seed: v.Seed, StartedAt: v.StartedAt,
		DurationS: v.DurationS, Interrupted: v.Interrupted, Environment: v.Environment,
		Load: Load{
			OfferedRPS: v.Load.OfferedRPS, AchievedRPS: v.Load.AchievedRPS, Completed: v.Load.Completed,
			Sent: v.Load.Sent, Dropped: v.Load.Dropped, MaxInflight: v.Load.MaxInflight,
			Concurrency: v.Load.Concurrency, GeneratorLimited: v.Load.GeneratorLimited,
			ScheduleLagP99Ms: v.Load.ScheduleLagP99Ms, Note: v.Load.Note,
		},
		Outcomes: v.Outcomes, Errors: Errors{
			Timeout: v.Errors.Timeout, Moved: v.Errors.Moved, Ask: v.Errors.Ask, TryAgain: v.Errors.TryAgain,
			ClusterDown: v.Errors.ClusterDown, NoScript: v.Errors.NoScript, Conn: v.Errors.Conn, Other: v.Errors.Other,
		},
		LatencyMs: servedAsOffered(v.LatencyMs), LatencyServedMs: v.LatencyMs,
		Overspend: Overspend{
			Requests: v.Overspend.Requests, Tokens: v.Overspend.Tokens, Ratio: v.Overspend.Ratio,
			FalseDenies: v.Overspend.FalseDenies, FalseDenyRatio: v.Overspend.FalseDenyRatio,
			UnknownOutcomes: v.Overspend.UnknownOutcomes, ByCause: v.Overspend.ByCause,
			Bound: Bound{Tokens: v.Overspend.BoundTokens, Sources: map[string]float64{}},
		},
		Central: Central{Ops: v.Central.Ops, OpsPerS: v.Central.OpsPerS},
		HotKeys: v.HotKeys, Nodes: v.Nodes, Process: v.Process, Faults: v.Faults, SLO: v.SLO, Part: v.Part,
	}
	if v.Overspend.BoundTokens != 0 {
		s.Overspend.Bound.Sources[BoundV1] = v.Overspend.BoundTokens
	}
	return s
}

// toV1 is the v1 layout of a Summary read from a v1 file (or merged from such): what v1 had,
// the served latency as v1's latency_ms and the bound's tokens as bound_tokens.
func toV1(s *Summary) *summaryV1 {
	l := &s.Load
	o := &s.Overspend
	e := &s.Errors
	return &summaryV1{
		Schema: SchemaSummaryV1, Scenario: s.Scenario, Seed: s.Seed, StartedAt: s.StartedAt,
		DurationS: s.DurationS, Interrupted: s.Interrupted, Environment: s.Environment,
		Load: loadV1{
			OfferedRPS: l.OfferedRPS, AchievedRPS: l.AchievedRPS, Completed: l.Completed, Sent: l.Sent,
			Dropped: l.Dropped, MaxInflight: l.MaxInflight, Concurrency: l.Concurrency,
			GeneratorLimited: l.GeneratorLimited, ScheduleLagP99Ms: l.ScheduleLagP99Ms, Note: l.Note,
		},
		Outcomes: s.Outcomes, Errors: errorsV1{
			Timeout: e.Timeout, Moved: e.Moved, Ask: e.Ask, TryAgain: e.TryAgain,
			ClusterDown: e.ClusterDown, NoScript: e.NoScript, Conn: e.Conn, Other: e.Other,
		},
		LatencyMs: s.LatencyServedMs,
		Overspend: overspendV1{
			Requests: o.Requests, Tokens: o.Tokens, Ratio: o.Ratio, FalseDenies: o.FalseDenies,
			FalseDenyRatio: o.FalseDenyRatio, BoundTokens: o.Bound.Tokens,
			UnknownOutcomes: o.UnknownOutcomes, ByCause: o.ByCause,
		},
		Central: centralV1{Ops: s.Central.Ops, OpsPerS: s.Central.OpsPerS},
		HotKeys: s.HotKeys, Nodes: s.Nodes, Process: s.Process, Faults: s.Faults, SLO: s.SLO, Part: s.Part,
	}
}
