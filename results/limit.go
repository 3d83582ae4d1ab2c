package results

// Limit names what held a run below its schedule, if anything: load.limit.
type Limit string

// Values of Load.Limit. A summary written before the field has "" (not judged).
const (
	// LimitNone: the generator kept its schedule and the requests completed within the window
	// came within ShortfallTolerance of the offered ones.
	LimitNone Limit = "none"
	// LimitGenerator: the generator did not keep its schedule — it dropped requests for falling
	// behind (load.dropped_behind), or its schedule lag p99 exceeded GeneratorLagMs. The figures
	// describe this machine at this load, not the limiter's ceiling.
	LimitGenerator Limit = "generator"
	// LimitLimiter: the generator kept its schedule, but the requests completed within the
	// window fell more than ShortfallTolerance short of the offered ones — dropped at
	// load.max_inflight, or answered after the window: the limiter (or its store) is slower
	// than the offered rate.
	LimitLimiter Limit = "limiter"
)

// GeneratorLagMs is the schedule lag p99 beyond which the generator, not the limiter, is the
// limit. A dispatcher that keeps its schedule hands requests out well under a millisecond late
// on an idle machine and tens of milliseconds late on a crowded one, and still offers the whole
// rate; one whose p99 lag is past a tenth of a second is falling behind, and its late requests
// end in late answers before they end in drops (the scenario engine drops a request as behind
// at a second, which marks the generator whatever the p99). Below the threshold the lag is in
// the latency and in load.schedule_lag_p99_ms, not in the limit.
const GeneratorLagMs = 100

// ShortfallTolerance is the share of the offered requests that may fail to complete within the
// window before a run counts as held below its schedule.
const ShortfallTolerance = 0.01

// JudgeLimit sets Limit and GeneratorLimited from the load's counts: Offered, Completed,
// DroppedBehind and ScheduleLagP99Ms, and lateCompleted, the requests (of any outcome, errors
// too) completed after the window ended. It is the one rule for every driver; see Limit's
// values for what each means.
func (l *Load) JudgeLimit(lateCompleted int64) {
	switch {
	case l.DroppedBehind > 0 || l.ScheduleLagP99Ms > GeneratorLagMs:
		l.Limit = LimitGenerator
	case l.Offered > 0 && float64(l.Completed-lateCompleted) < (1-ShortfallTolerance)*float64(l.Offered):
		l.Limit = LimitLimiter
	default:
		l.Limit = LimitNone
	}
	l.GeneratorLimited = l.Limit == LimitGenerator
}

// worse is the limit of a merged run: the generator's if any part's, else the limiter's if any
// part's, else none (or not judged when no part was).
func (l Limit) worse(o Limit) Limit {
	rank := func(x Limit) int {
		switch x {
		case LimitGenerator:
			return 3
		case LimitLimiter:
			return 2
		case LimitNone:
			return 1
		}
		return 0
	}
	if rank(o) > rank(l) {
		return o
	}
	return l
}
