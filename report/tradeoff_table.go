package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"ratelab/results"
)

// fmtRange formats a range of counts: "0", "12" when both ends agree, "3–17" otherwise.
func fmtRange(lo, hi int64) string {
	if lo == hi {
		return fmtInt(lo)
	}
	return fmtInt(lo) + "–" + fmtInt(hi)
}

// fmtTokensBack is a run's tokens back as a range, or why there is none.
func fmtTokensBack(tb *results.TokensBack) string {
	if tb == nil {
		return "not counted"
	}
	return fmtRange(tb.Min, tb.Max)
}

// fmtTokensBound is the bound on the tokens back and whether the most the run lost kept it.
func fmtTokensBound(tb *results.TokensBack) string {
	switch {
	case tb == nil:
		return "—"
	case tb.Verdict == results.VerdictBeyond:
		return fmtFixed(tb.Bound, 0) + " (**beyond**)"
	}
	return fmtFixed(tb.Bound, 0) + " (" + tb.Verdict + ")"
}

// fmtKinds lists counts by kind, largest first then by name: "unreplicated 40, timeout 3".
func fmtKinds(m map[string]int64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return int(min(max(m[b]-m[a], -1), 1))
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + fmtInt(m[k])
	}
	return strings.Join(parts, ", ")
}

// fmtOptShare is fmtShare of *p, or an em dash for nil.
func fmtOptShare(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmtShare(*p)
}

// mdLink is text linking to a run directory, or the text alone when there is none.
func mdLink(text, dir string) string {
	if dir == "" {
		return mdEscape(text)
	}
	return "[" + mdEscape(text) + "](" + dir + ")"
}

// csvMs is a latency for a CSV cell: empty when not measurable.
func csvMs(m results.Ms) string {
	if !m.Measurable() {
		return ""
	}
	return strconv.FormatFloat(float64(m), 'f', 3, 64)
}

// csvFloat is a float for a CSV cell, as short as it reads back exactly.
func csvFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// writeCSV encodes a header and its records.
func writeCSV(header []string, records [][]string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(header); err != nil {
		return nil, err
	}
	if err := w.WriteAll(records); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// regionsCSV is sweep.csv: one record per row, latencies empty when not measurable.
func regionsCSV(rows []RegionsRow) ([]byte, error) {
	header := []string{"design", "period_s", "label", "overspend_ratio", "false_deny_ratio", "errors_per_allowed",
		"worst_region", "worst_p99_ms", "mean_p99_ms", "availability", "cross_region_calls_per_s", "pareto", "error", "dir"}
	var recs [][]string
	for _, r := range rows {
		recs = append(recs, []string{r.Design, csvFloat(r.PeriodS), r.Label, csvFloat(r.OverspendRatio), csvFloat(r.FalseDenyRatio),
			csvFloat(r.ErrorsPerAllowed), r.WorstRegion, csvMs(r.WorstP99Ms), csvMs(r.MeanP99Ms), csvFloat(r.Availability),
			csvFloat(r.CrossRegionCallsPerS), strconv.FormatBool(r.Pareto), r.Error, r.Dir})
	}
	return writeCSV(header, recs)
}

// durabilityCSV is durability.csv: tokens back as min and max columns, empty when not counted.
func durabilityCSV(rows []DurabilityRow) ([]byte, error) {
	header := []string{"rank", "fault", "setting", "tokens_back_min", "tokens_back_max", "tokens_back_bound", "tokens_back_verdict",
		"failed", "failed_by_kind", "dropped", "steady_p50_ms", "steady_p99_ms", "fault_availability", "error", "dir"}
	var recs [][]string
	for _, r := range rows {
		tmin, tmax, bound, within := "", "", "", ""
		if tb := r.TokensBack; tb != nil {
			tmin, tmax, bound = strconv.FormatInt(tb.Min, 10), strconv.FormatInt(tb.Max, 10), csvFloat(tb.Bound)
			within = tb.Verdict
		}
		avail := ""
		if r.FaultAvailability != nil {
			avail = csvFloat(*r.FaultAvailability)
		}
		recs = append(recs, []string{strconv.Itoa(r.Rank), r.Fault, r.Setting, tmin, tmax, bound, within,
			strconv.FormatInt(r.Failed, 10), fmtKinds(r.FailedByKind), strconv.FormatInt(r.Dropped, 10),
			csvMs(r.SteadyP50Ms), csvMs(r.SteadyP99Ms), avail, r.Error, r.Dir})
	}
	return writeCSV(header, recs)
}

// sweepMarkdown is sweep.md: the plot, the table and what its columns mean.
func sweepMarkdown(rows []RegionsRow) string {
	var b strings.Builder
	b.WriteString("# Regions sweep: what each design costs\n\n")
	fmt.Fprintf(&b, "![worst-region p99 against overspend and false denies per allowed request, one point per design and period](%s.png)\n\n", TradeoffChart)
	b.WriteString("| design | overspend ratio | false-deny ratio | (overspend + false denies) / allowed | worst region p99 ms | mean p99 ms | availability | cross-region calls/s | Pareto | note |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: | --- |\n")
	for _, r := range rows {
		pareto := ""
		if r.Pareto {
			pareto = "yes"
		}
		worst := fmtLatency(r.WorstP99Ms)
		if r.WorstRegion != "" {
			worst += " (" + mdEscape(r.WorstRegion) + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdLink(r.Label, r.Dir),
			fmtPct(r.OverspendRatio), fmtPct(r.FalseDenyRatio), fmtPct(r.ErrorsPerAllowed), worst, fmtLatency(r.MeanP99Ms),
			fmtShare(r.Availability), fmtRate(r.CrossRegionCallsPerS), pareto, mdEscape(r.Error))
	}
	b.WriteString("\nEvery design runs the same trace (seed, load, tenants); T is the rebalance period, and the designs without one run once. ")
	b.WriteString("Overspend and false denies are judged against the global envelope: one exact bucket per tenant over every region's allowed requests. ")
	b.WriteString("The overspend ratio is per allowed request, the false-deny ratio per denied request. ")
	b.WriteString("p99 is over each region's offered requests; the mean is over regions. Availability is the share of offered requests the limiter decided within the decision budget, weighted by each region's offered requests. ")
	b.WriteString("Pareto marks the rows no other row beats on both worst p99 and errors per allowed request. A row with a note failed or did not finish: its figures are what it left.\n")
	return b.String()
}

// durabilityMarkdown is durability.md: the plot, the ranked table and what its columns mean.
func durabilityMarkdown(rows []DurabilityRow) string {
	var b strings.Builder
	b.WriteString("# Durability: what a fault returns, and what waiting costs\n\n")
	fmt.Fprintf(&b, "![steady-state p99 against the most tokens a fault returned, one point per fault and setting](%s.png)\n\n", DurabilityChart)
	b.WriteString("| rank | fault | setting | tokens back | bound | decisions failed | dropped | steady p50 / p99 ms | availability in the fault window | note |\n")
	b.WriteString("| ---: | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- |\n")
	for _, r := range rows {
		rank := "—"
		if r.Rank > 0 {
			rank = strconv.Itoa(r.Rank)
		}
		failed := fmtInt(r.Failed)
		if len(r.FailedByKind) > 0 {
			failed += " (" + fmtKinds(r.FailedByKind) + ")"
		}
		note := strings.Join(append([]string{r.Error}, r.Notes...), "; ")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s |\n", rank, mdEscape(r.Fault), mdLink(r.Setting, r.Dir),
			fmtTokensBack(r.TokensBack), fmtTokensBound(r.TokensBack), failed, fmtInt(r.Dropped),
			fmtLatency(r.SteadyP50Ms), fmtLatency(r.SteadyP99Ms), fmtOptShare(r.FaultAvailability), mdEscape(strings.TrimPrefix(note, "; ")))
	}
	b.WriteString("\nRanked by the tokens a fault certainly returned, then by the most it may have returned, then by steady p99; a run that failed has no rank and is listed last, saying why. ")
	b.WriteString("Tokens back are the debits the clients saw allowed that the cluster's surviving state lacks, as a range over the decisions whose outcome was unknown (timeouts). ")
	b.WriteString("Decisions failed counts the store's failures (errors, and a fail policy's answers), by kind; dropped counts the requests the generator dropped (offered, never decided). ")
	b.WriteString("The steady state is the whole seconds before the first fault, without the first (warm-up); its percentiles are over the offered requests. ")
	b.WriteString("The settings: async (Redis's replication), wait (WAIT after each decision), wait-pipeline (WAIT after each pipeline of the coalescing transport), min-replicas (async decisions on primaries that refuse writes once no replica has acknowledged within the max lag: `ratelab durability` sets 1 s, the least Redis counts, unless the scenario sets its own). kill-primary kills the partition's primary at the partition's start and restarts it at the heal. ")
	b.WriteString("Availability in the fault window is the share of the offered requests of the seconds from the first fault to the last fault's end (its recovery, or its heal) that the limiter decided.\n")
	return b.String()
}
