package results

// Stages is what a run with load stages (a ramped arrival rate) adds to its summary: for each
// SLO check judged second by second, the first second that failed it and the offered rate
// there — where the ramp found the knee. A run without stages has none.
type Stages struct {
	// Checked lists, in the SLO's order, the checks judged on every second: the scenario's SLO
	// checks that have a per-second counterpart (p99_ms, p999_ms, achieved_ratio, error_ratio,
	// overspend_ratio, false_deny_ratio).
	Checked []string `json:"checked"`
	// FirstFailure holds, for each checked check that some second failed, the first such second;
	// a check absent from it passed every second.
	FirstFailure []StageFailure `json:"first_failure"`
	// PeakOfferedRPS is the most requests offered in one second of the run.
	PeakOfferedRPS float64 `json:"peak_offered_rps"`
}

// StageFailure is the first second that failed one SLO check.
type StageFailure struct {
	// Check is the SLO key, e.g. "p99_ms".
	Check string `json:"check"`
	// AtS is the second's start (its row's t_s).
	AtS float64 `json:"at_s"`
	// OfferedRPS is the second's offered requests: the offered rate at which the check first
	// failed.
	OfferedRPS float64 `json:"offered_rps"`
	// Value is the second's value of the check; null when not measurable (a latency percentile
	// that falls among the second's unanswered requests, which fails any bound).
	Value *float64 `json:"value"`
	// Limit is the check's bound, as in the SLO.
	Limit float64 `json:"limit"`
	// FailedSeconds is how many seconds of the run failed the check, this one included.
	FailedSeconds int `json:"failed_seconds"`
}
