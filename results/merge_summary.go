package results

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// mergeSummaries builds the merged summary from the parts' (sorted by index, all of one schema):
// the totals of every input, then what is recomputed from them (latency, ratios, bound, node
// shares, hot keys, failed faults), then the part record and the note that says how the merge
// was done. Parts read from v1 files merge into a v1 summary, by v1's definitions.
func mergeSummaries(runs []*partRun, hist *Histogram, keys []KeyTally) *Summary {
	sum := mergedBase(runs[0].sum)
	nodes := nodeTotals{byAddr: map[string]*NodeStats{}}
	hotNode := map[string]string{}
	var merged []int
	var notes []Note
	for i, r := range runs {
		s := r.sum
		merged = append(merged, s.Part.Index)
		if s.Load.Note != "" {
			notes = append(notes, Note{Kind: NoteParts, Text: fmt.Sprintf("[part %d] %s", s.Part.Index, s.Load.Note)})
		}
		addRunTotals(sum, s)
		nodes.add(s.Nodes)
		for _, h := range s.HotKeys {
			if h.Node != "" {
				hotNode[h.Key] = h.Node
			}
		}
		maxProcess(&sum.Process, &s.Process, i == 0)
	}
	setMergedLatency(sum, hist)
	setOverspendRatios(&sum.Overspend, &sum.Outcomes)
	mergeBound(sum, runs)
	sum.Faults = mergeFaults(runs)
	sum.Nodes = nodes.appendTo(sum.Nodes)
	sum.HotKeys = TopKeys(keys, MergeHotKeys, func(k string) string { return hotNode[k] })

	count := runs[0].sum.Part.Count
	missing := missingIndexes(merged, count)
	sum.Part = &Part{Index: -1, Count: count, Merged: merged, Missing: missing}
	sum.Load.AddNote(NoteMerge, mergedNote(sum.V1(), merged, missing, count))
	for _, n := range notes {
		sum.Load.AddNote(n.Kind, n.Text)
	}
	return sum
}

// mergedBase is the merged summary before any input is added: the first input's identity,
// schema, environment (its core count reset, as cores add) and SLO verdict.
func mergedBase(first *Summary) *Summary {
	sum := NewSummary(first.Scenario, first.Seed, first.StartedAt)
	sum.Schema = first.Schema
	sum.Environment = first.Environment
	sum.Environment.Cores = 0
	sum.SLO = first.SLO
	return sum
}

// addRunTotals adds one input's counts and rates to sum. The run starts with the earliest
// input and lasts as long as the longest; it is interrupted if any input was.
func addRunTotals(sum, s *Summary) {
	if s.StartedAt.Before(sum.StartedAt) {
		sum.StartedAt = s.StartedAt
	}
	sum.DurationS = max(sum.DurationS, s.DurationS)
	sum.Interrupted = sum.Interrupted || s.Interrupted
	sum.Environment.Cores += s.Environment.Cores
	addLoad(&sum.Load, &s.Load)
	addOutcomes(&sum.Outcomes, &s.Outcomes)
	addErrors(&sum.Errors, &s.Errors)
	addOverspend(&sum.Overspend, &s.Overspend)
	sum.LatencyClamped += s.LatencyClamped
	sum.Central.Ops += s.Central.Ops
	sum.Central.OpsPerS += s.Central.OpsPerS
	sum.Central.OtherOps += s.Central.OtherOps
}

// addLoad adds s to l. Rates and counts add; the schedule lag p99 is the worst input's, as
// percentiles of different generators do not add.
func addLoad(l, s *Load) {
	l.OfferedRPS += s.OfferedRPS
	l.AchievedRPS += s.AchievedRPS
	l.Offered += s.Offered
	l.Completed += s.Completed
	l.Late += s.Late
	l.Sent += s.Sent
	l.Dropped += s.Dropped
	l.DroppedInflight += s.DroppedInflight
	l.DroppedBehind += s.DroppedBehind
	l.LostSeconds += s.LostSeconds
	l.MaxInflight += s.MaxInflight
	l.Concurrency += s.Concurrency
	l.GeneratorLimited = l.GeneratorLimited || s.GeneratorLimited
	l.Limit = l.Limit.worse(s.Limit)
	l.ScheduleLagP99Ms = max(l.ScheduleLagP99Ms, s.ScheduleLagP99Ms)
}

func addOutcomes(o, s *Outcomes) {
	o.Allowed += s.Allowed
	o.Denied += s.Denied
	o.FailedOpen += s.FailedOpen
	o.FailedClosed += s.FailedClosed
	o.Errors += s.Errors
}

func addErrors(e, s *Errors) {
	e.Timeout += s.Timeout
	e.Moved += s.Moved
	e.Ask += s.Ask
	e.TryAgain += s.TryAgain
	e.ClusterDown += s.ClusterDown
	e.NoScript += s.NoScript
	e.Conn += s.Conn
	e.Unreplicated += s.Unreplicated
	e.Other += s.Other
}

// addOverspend adds the counts of s to ov, confirmed and possible alike; the ratios are
// recomputed from the merged totals (setOverspendRatios) and the bound by mergeBound. The burst
// excess is per key and the parts' keys are disjoint: the sums add and the worst key is the
// worst part's (the first of equals).
func addOverspend(ov, s *Overspend) {
	ov.Requests += s.Requests
	ov.Tokens += s.Tokens
	ov.PossibleRequests += s.PossibleRequests
	ov.PossibleTokens += s.PossibleTokens
	ov.FalseDenies += s.FalseDenies
	ov.PossibleFalseDenies += s.PossibleFalseDenies
	ov.UnknownOutcomes += s.UnknownOutcomes
	for c, n := range s.ByCause {
		ov.ByCause[c] += n
	}
	ov.BurstExcess.Tokens += s.BurstExcess.Tokens
	if s.BurstExcess.WorstTokens > ov.BurstExcess.WorstTokens || ov.BurstExcess.WorstKey == "" && s.BurstExcess.WorstKey != "" {
		ov.BurstExcess.WorstKey, ov.BurstExcess.WorstTokens = s.BurstExcess.WorstKey, s.BurstExcess.WorstTokens
	}
}

// setOverspendRatios recomputes the ratios of ov from its counts and the outcomes: overspend per
// request let through, false denies per request denied, confirmed and possible.
func setOverspendRatios(ov *Overspend, o *Outcomes) {
	through, denied := o.Allowed+o.FailedOpen, o.Denied+o.FailedClosed
	ov.Ratio, ov.PossibleRatio = Ratio(ov.Requests, through), Ratio(ov.PossibleRequests, through)
	ov.FalseDenyRatio, ov.PossibleFalseDenyRatio = Ratio(ov.FalseDenies, denied), Ratio(ov.PossibleFalseDenies, denied)
}

// nodeTotals adds the inputs' per-node counts, keeping the order in which nodes first appear.
type nodeTotals struct {
	byAddr map[string]*NodeStats
	order  []string
	ops    int64 // every node's ops: the denominator of the shares
}

func (t *nodeTotals) add(nodes []NodeStats) {
	for _, n := range nodes {
		dst, ok := t.byAddr[n.Addr]
		if !ok {
			dst = &NodeStats{Addr: n.Addr}
			t.byAddr[n.Addr] = dst
			t.order = append(t.order, n.Addr)
		}
		dst.Ops += n.Ops
		t.ops += n.Ops
		dst.Moved += n.Moved
		dst.Ask += n.Ask
		dst.NoScript += n.NoScript
		dst.TryAgain += n.TryAgain
		dst.ClusterDown += n.ClusterDown
		dst.Timeout += n.Timeout
		dst.Conn += n.Conn
	}
}

// appendTo appends the merged nodes to dst, each with its share of every node's ops.
func (t *nodeTotals) appendTo(dst []NodeStats) []NodeStats {
	for _, a := range t.order {
		n := t.byAddr[a]
		n.Share = Ratio(n.Ops, t.ops)
		dst = append(dst, *n)
	}
	return dst
}

// maxProcess folds one input's footprint into p: every sample takes the larger of the two (the
// largest generator's footprint). first says s is the first input.
func maxProcess(p, s *Process, first bool) {
	// Settled only if every part's samples were (one unsettled part makes the maxima raw).
	p.Settled = s.Settled && (first || p.Settled)
	p.RSSWarmMB, p.RSSEndMB = max(p.RSSWarmMB, s.RSSWarmMB), max(p.RSSEndMB, s.RSSEndMB)
	p.HeapWarmMB, p.HeapEndMB = max(p.HeapWarmMB, s.HeapWarmMB), max(p.HeapEndMB, s.HeapEndMB)
	p.GoroutinesWarm, p.GoroutinesEnd = max(p.GoroutinesWarm, s.GoroutinesWarm), max(p.GoroutinesEnd, s.GoroutinesEnd)
	p.RSSPeakMB = max(p.RSSPeakMB, s.RSSPeakMB)
	p.AnonWarmMB, p.AnonEndMB = max(p.AnonWarmMB, s.AnonWarmMB), max(p.AnonEndMB, s.AnonEndMB)
	p.RSSMidMB, p.AnonMidMB = max(p.RSSMidMB, s.RSSMidMB), max(p.AnonMidMB, s.AnonMidMB)
	p.RSSEarlyMB, p.AnonEarlyMB = max(p.RSSEarlyMB, s.RSSEarlyMB), max(p.AnonEarlyMB, s.AnonEarlyMB)
	// The parts run the same spec, so they sample at the same seconds.
	p.WarmS, p.MidS, p.EarlyS = max(p.WarmS, s.WarmS), max(p.MidS, s.MidS), max(p.EarlyS, s.EarlyS)
	p.Warm, p.End = maxSplit(p.Warm, s.Warm), maxSplit(p.End, s.End)
}

// maxSplit is the larger of two memory splits, field by field (nil when both are).
func maxSplit(a, b *MemSplit) *MemSplit {
	if a == nil || b == nil {
		if a == nil {
			return b
		}
		return a
	}
	return &MemSplit{HeapInuseMB: max(a.HeapInuseMB, b.HeapInuseMB), StacksMB: max(a.StacksMB, b.StacksMB), RuntimeMB: max(a.RuntimeMB, b.RuntimeMB)}
}

// setMergedLatency sets the whole-run latency from the merged histogram and the merged counts:
// over offered requests (those that got no decision — offered minus the histogram's decided —
// are slower than any latency) and over served ones. A v2 merge keeps v2's: its histogram held
// errors too, and only the drops were failures. A v1 merge keeps v1's definition, latency over
// the answered requests only, in both.
func setMergedLatency(sum *Summary, hist *Histogram) {
	undecided := sum.Load.Offered - hist.Count()
	if sum.Schema == SchemaSummaryV2 {
		undecided = sum.Load.Dropped
	}
	sum.LatencyMs, sum.LatencyServedMs = LatencyOf(hist, undecided)
	if sum.V1() {
		sum.LatencyMs = servedAsOffered(sum.LatencyServedMs)
	}
}

// missingIndexes lists the indexes in [0, count) that merged lacks.
func missingIndexes(merged []int, count int) []int {
	var missing []int
	for i := range count {
		if !slices.Contains(merged, i) {
			missing = append(missing, i)
		}
	}
	return missing
}

// mergedNote is the merged summary's first note: a warning naming missing parts and how the
// merge combined the inputs (and, for v1 parts, that their definitions are the old ones). Each
// input's own note follows it (NoteParts).
func mergedNote(v1 bool, merged, missing []int, count int) string {
	bound := "the overspend bound is the largest part's (a bound per key: bounds of disjoint keys do not add), judged part by part"
	if v1 {
		bound = "the v1 overspend bounds (whole-run bounds) add"
	}
	head := fmt.Sprintf("merged from parts %s of %d (ratelab merge): counts and rates add, latency from the merged HDR histograms, "+
		"hot keys from the merged %s; schedule lag p99 is the worst part's and the process footprint the largest part's; %s",
		joinInts(merged), count, TallyFile, bound)
	if v1 {
		head = V1Note + "; " + head
	}
	if len(missing) > 0 {
		head = fmt.Sprintf("WARNING: parts %s of %d missing: every total covers parts %s only; ", joinInts(missing), count, joinInts(merged)) + head
	}
	return head
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
