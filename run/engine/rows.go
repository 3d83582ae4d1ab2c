package engine

import (
	"fmt"
	"time"

	"ratelab/results"
)

// row turns one second's stats into its timeseries row, with the session's marks added.
func (d *driver) row(sec int, s *Account) results.Interval {
	iv := s.Interval(sec, d.offered[sec].Load(), d.sent[sec].Load(), d.dropped[sec].Load())
	iv.Late = d.lateAnswers[sec].Load()
	d.s.FillRow(sec, &iv)
	return iv
}

// FillRow adds to a driver's row of second sec what the session measured beside the decisions:
// faults injected, store failures a fail policy answered, false denies withdrawn, the MOVED, ASK
// and NOSCRIPT replies the node hooks saw, and the tariff version live at the second's end.
func (s *Session) FillRow(sec int, iv *results.Interval) {
	s.marks.fillRow(sec, iv)
	if s.store != nil {
		s.store.fillRow(sec, iv)
	}
	if s.tariffs != nil {
		iv.PolicyVersion = s.tariffs.versionAt(time.Unix(0, s.marks.baseNs.Load()).Add(time.Duration(sec+1) * time.Second))
	}
}

// counts are the dispatcher's totals over the seconds written, and the late decisions (any
// outcome) and late answers (not errors).
type counts struct{ offered, sent, dropped, behind, late, lateAnswers int64 }

// summarize fills the driver's part of the summary: load, outcomes, decision errors, latency and
// overspend, and the hot keys (without their nodes).
func (d *driver) summarize(sum *results.Summary, t *Account, ran time.Duration, c counts) {
	secs := ran.Seconds()
	decisions := t.Decided() + t.Errors()
	sum.DurationS = secs
	sum.Interrupted = d.interrupted.Load()
	sum.Load = results.Load{
		Offered: c.offered, Completed: decisions, Late: c.lateAnswers, Sent: c.sent, Dropped: c.dropped,
		DroppedInflight: c.dropped - c.behind, DroppedBehind: c.behind,
		MaxInflight: d.spec.Load.MaxInflight, Concurrency: d.spec.Load.Concurrency,
		ScheduleLagP99Ms: d.lag.QuantileMs(99), LostSeconds: d.rec.lostSeconds(),
	}
	if secs > 0 {
		// Achieved: decisions within the window; errors are no decision, late ones came after it.
		sum.Load.OfferedRPS = float64(c.offered) / secs
		sum.Load.AchievedRPS = float64(max(t.Decided()-c.lateAnswers, 0)) / secs
	}
	sum.Load.JudgeLimit(c.late)
	d.addLoadNotes(&sum.Load, decisions, c)
	t.FillSummary(sum)
	sum.LatencyMs, sum.LatencyServedMs = results.LatencyOf(t.hist, c.offered-t.Decided())
	sum.LatencyClamped = t.hist.Clamped()
	sum.Overspend = d.s.OverspendOf(d.s.checker.Totals(), t.allowed+t.failOpen, t.denied+t.failClosed, d.s.tally.keyName)
	sum.Overspend.UnknownOutcomes = t.unknown
	sum.HotKeys = d.s.tally.hotKeys()
}

// addLoadNotes says why the run fell short of its schedule, if it did, and its schedule lag.
func (d *driver) addLoadNotes(l *results.Load, decisions int64, c counts) {
	switch l.Limit {
	case results.LimitGenerator:
		l.AddNote(results.NoteLoad, fmt.Sprintf("achieved %.0f of %.0f requests/s offered (%.1f%% completed in the window): the generator fell behind its schedule, so the numbers describe this machine at this load, not the limiter's ceiling",
			l.AchievedRPS, l.OfferedRPS, 100*float64(decisions-c.late)/float64(c.offered)))
	case results.LimitLimiter:
		l.AddNote(results.NoteLoad, fmt.Sprintf("achieved %.0f of %.0f requests/s offered (%.1f%% completed in the window) with the generator on schedule: the limiter (or its store) was slower than the offered rate",
			l.AchievedRPS, l.OfferedRPS, 100*float64(decisions-c.late)/float64(c.offered)))
	}
	if c.late > 0 {
		l.AddNote(results.NoteLate, fmt.Sprintf("%d decisions answered after the run's window ended (late: counted in decisions, not in the achieved rate)", c.late))
	}
	if l.LostSeconds > 0 {
		l.AddNote(results.NoteRows, fmt.Sprintf("WARNING: %d per-second rows were written out of order (the collector fell behind); their counts are in the totals", l.LostSeconds))
	}
	if n := c.dropped - c.behind; n > 0 {
		l.AddNote(results.NoteDrops, fmt.Sprintf("%d requests dropped because %d were already in flight (load.max_inflight): decisions were slower than the offered rate", n, d.spec.Load.MaxInflight))
	}
	if c.behind > 0 {
		l.AddNote(results.NoteDrops, fmt.Sprintf("%d requests dropped because the generator fell more than %s behind its schedule (CPU-bound)", c.behind, maxScheduleLag))
	}
	l.AddNote(results.NoteLag, fmt.Sprintf("schedule lag p99 %.3f ms (time from intended start to dispatch; counted in latency)", l.ScheduleLagP99Ms))
}
