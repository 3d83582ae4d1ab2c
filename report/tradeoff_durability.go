package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"ratelab/results"
)

// DurabilityRow is one fault and durability setting of a durability matrix.
type DurabilityRow struct {
	// Rank orders the measured rows: fewest tokens back (max) first, then lowest steady p99.
	// 0 for a row that failed: it has no place in the ranking, and is listed last.
	Rank    int    `json:"rank"`
	Fault   string `json:"fault"`
	Setting string `json:"setting"`
	// Label names the row on the plot: the setting, and the fault.
	Label string `json:"label"`
	// Dir is the run directory, relative to the matrix's directory.
	Dir string `json:"dir"`
	// Error says why the run failed or did not finish.
	Error string `json:"error,omitempty"`
	// TokensBack is the run's count of debits the faults returned; nil when the run did not
	// count them (no audit, or no run).
	TokensBack *results.TokensBack `json:"tokens_back"`
	// Failed is the decisions the store failed: errors, and a fail policy's answers.
	// FailedByKind splits the store's failed calls by kind (timeout, unreplicated...), the
	// non-zero ones.
	Failed       int64            `json:"failed"`
	FailedByKind map[string]int64 `json:"failed_by_kind,omitempty"`
	// Dropped is the requests the generator dropped: offered, never decided.
	Dropped int64 `json:"dropped"`
	// SteadyFromS and SteadyToS are the seconds the steady state covers: from the first after
	// the warm-up second to the last whole second before the first fault.
	SteadyFromS float64 `json:"steady_from_s"`
	SteadyToS   float64 `json:"steady_to_s"`
	// SteadyP50Ms and SteadyP99Ms are the percentiles over those seconds' offered requests;
	// +Inf (JSON null) when not measurable or not read.
	SteadyP50Ms results.Ms `json:"steady_p50_ms"`
	SteadyP99Ms results.Ms `json:"steady_p99_ms"`
	// FaultFromS and FaultToS are the fault window: from the first fault to the last fault's
	// end (its recovery, or the end of what it lasted); FaultAvailability is the share of the
	// window's offered requests the limiter decided (allowed or denied, not an error, a fail
	// policy's answer or a drop); nil when the run had no fault or no row in the window.
	FaultFromS        float64  `json:"fault_from_s"`
	FaultToS          float64  `json:"fault_to_s"`
	FaultAvailability *float64 `json:"fault_availability"`
	// Notes are what could not be read (a missing per-second file...).
	Notes []string `json:"notes,omitempty"`
}

// DurabilityRows builds one row per run and ranks them (see DurabilityRow.Rank): the measured
// rows by rank, then the failed ones in the runs' order. dir is the matrix's directory: rows
// name their run directory relative to it. Each run's steady state and fault window are read
// from its timeseries.csv and latency.hlog.
func DurabilityRows(dir string, runs []results.StudyRun) []DurabilityRow {
	rows := make([]DurabilityRow, 0, len(runs))
	for _, r := range runs {
		row := DurabilityRow{Fault: r.Fault, Setting: r.Setting, Label: r.Setting + " / " + r.Fault, Dir: relDir(dir, r.Dir), Error: r.Err}
		row.SteadyP50Ms, row.SteadyP99Ms = results.Unmeasurable, results.Unmeasurable
		if r.Summary == nil {
			row.Error = cmp.Or(row.Error, "no summary")
		} else {
			row.Error = cmp.Or(row.Error, faultFailure(r.Summary))
			fillDurability(&row, r.Summary)
			readWindows(&row, r.Dir, r.Summary)
		}
		rows = append(rows, row)
	}
	RankDurability(rows)
	return rows
}

// RankDurability sorts rows as DurabilityRows does and sets their ranks.
func RankDurability(rows []DurabilityRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if (a.Error == "") != (b.Error == "") {
			return a.Error == ""
		}
		if a.Error != "" {
			return false
		}
		if ta, tb := tokensBackMin(a), tokensBackMin(b); ta != tb {
			return ta < tb
		}
		if ta, tb := tokensBackMax(a), tokensBackMax(b); ta != tb {
			return ta < tb
		}
		return a.SteadyP99Ms < b.SteadyP99Ms
	})
	for i := range rows {
		rows[i].Rank = 0
		if rows[i].Error == "" {
			rows[i].Rank = i + 1
		}
	}
}

// faultFailure says which of the run's faults could not be carried out: such a run did not
// test what its scenario asked, and its row is not a measurement of its setting. "" when every
// fault ran.
func faultFailure(s *results.Summary) string {
	var failed []string
	for _, f := range s.Faults {
		if f.Failed {
			failed = append(failed, fmt.Sprintf("fault %s at %gs failed: %s", f.Kind, f.AtS, f.Error))
		}
	}
	return strings.Join(failed, "; ")
}

// tokensBackMin is the row's tokens certainly back, +Inf when it was not counted.
func tokensBackMin(r DurabilityRow) float64 {
	if r.TokensBack == nil {
		return math.Inf(1)
	}
	return float64(r.TokensBack.Min)
}

// tokensBackMax is the row's tokens back at most, +Inf when it was not counted: a run that
// cannot say how much it lost ranks after every run that can.
func tokensBackMax(r DurabilityRow) float64 {
	if r.TokensBack == nil {
		return math.Inf(1)
	}
	return float64(r.TokensBack.Max)
}

// fillDurability fills the figures the summary holds.
func fillDurability(row *DurabilityRow, s *results.Summary) {
	row.TokensBack = s.TokensBack
	row.Failed = s.Outcomes.Errors + s.Outcomes.FailedOpen + s.Outcomes.FailedClosed
	row.Dropped = s.Load.Dropped
	row.FailedByKind = failedByKind(s.Errors)
}

// failedByKind is the non-zero failed calls by kind, read by their JSON names so that every
// kind the summary counts is in, whatever the kind; the redirects a client followed are not
// failures and are left out.
func failedByKind(e results.Errors) map[string]int64 {
	b, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	var all map[string]int64
	if json.Unmarshal(b, &all) != nil {
		return nil
	}
	out := map[string]int64{}
	for k, v := range all {
		if v != 0 && k != "moved" && k != "ask" {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// faultsSpan is the span from the first fault to the end of the last: its recovery when it
// has one, else the end of what it lasted. ok is false without faults.
func faultsSpan(faults []results.Fault) (from, to float64, ok bool) {
	if len(faults) == 0 {
		return 0, 0, false
	}
	from, to = math.Inf(1), math.Inf(-1)
	for _, f := range faults {
		from = min(from, f.AtS)
		to = max(to, f.AtS+f.ForS, f.RecoveredS)
	}
	return from, to, true
}

// readWindows reads the run's per-second files for its steady state and its fault window.
func readWindows(row *DurabilityRow, dir string, s *results.Summary) {
	rows, err := readTimeseries(filepath.Join(dir, results.TimeseriesFile))
	if err != nil {
		row.Notes = append(row.Notes, results.TimeseriesFile+": "+err.Error())
	}
	from, to, faulted := faultsSpan(s.Faults)
	end := s.DurationS
	if faulted {
		end = from
		row.FaultFromS, row.FaultToS = from, to
		row.FaultAvailability = windowAvailability(rows, from, to)
	}
	row.SteadyFromS, row.SteadyToS = steadySpan(end)
	log, err := readLatencyLog(filepath.Join(dir, results.LatencyLogFile))
	if err != nil {
		row.Notes = append(row.Notes, results.LatencyLogFile+": "+err.Error())
	}
	if log != nil {
		row.SteadyP50Ms, row.SteadyP99Ms = steadyLatency(log.Seconds, rows, row.SteadyFromS, row.SteadyToS)
	}
}

// steadySpan is the whole seconds before end, without the first (connection warm-up) when
// there are two or more.
func steadySpan(end float64) (from, to float64) {
	to = math.Floor(end)
	if to >= 2 {
		from = 1
	}
	return from, to
}

// steadyLatency is p50 and p99 over the offered requests of the seconds [from, to): the
// seconds' histograms merged, their drops from the rows.
func steadyLatency(seconds map[int]*results.Histogram, rows []results.Interval, from, to float64) (p50, p99 results.Ms) {
	h := results.NewHistogram()
	for sec, sh := range seconds {
		if float64(sec) >= from && float64(sec) < to {
			h.Merge(sh)
		}
	}
	var dropped int64
	for _, r := range rows {
		if r.TS >= from && r.TS < to {
			dropped += r.Dropped
		}
	}
	l, _ := results.LatencyOf(h, dropped)
	return l.P50, l.P99
}

// windowAvailability is the share of the offered requests of the seconds that overlap
// [from, to) that the limiter decided; nil when those seconds offered nothing.
func windowAvailability(rows []results.Interval, from, to float64) *float64 {
	var offered, decided int64
	for _, r := range rows {
		if r.TS+1 > from && r.TS < max(to, from+1e-9) {
			offered += r.Offered
			decided += r.Allowed + r.Denied
		}
	}
	if offered == 0 {
		return nil
	}
	a := results.Ratio(decided, offered)
	return &a
}

// readLatencyLog reads latency.hlog; a cut-short file gives the seconds before the cut.
func readLatencyLog(path string) (*results.LatencyLog, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("missing: no per-second latency")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := results.ReadLatencyLog(f)
	if err != nil && l != nil {
		return l, fmt.Errorf("%w (the steady state uses the seconds before it)", err)
	}
	return l, err
}
