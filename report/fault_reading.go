package report

import (
	"strings"

	"ratelab/results"
)

// faultRow is one row of the reports' Faults table, every cell already formatted. Times are
// seconds since the start of the load; "—" means the run did not observe the event.
type faultRow struct {
	At, Kind, Target, Detected, Recovered string
	// Reading says in one line what the fault did, e.g. "detected after 1.1 s, recovered 2.4 s
	// after injection; in 8–11 s: 37 failed decisions, 3 overspend requests". A fault that
	// could not be carried out starts with "FAILED, not carried out:" and its error.
	Reading string
	// Failed is true when the fault could not be carried out.
	Failed bool
}

// faultRows formats the summary's faults, in schedule order, against the per-second rows.
func faultRows(faults []results.Fault, rows []results.Interval) []faultRow {
	out := make([]faultRow, len(faults))
	for i, f := range faults {
		out[i] = faultRow{
			At: fmtSec(f.AtS), Kind: f.Kind, Target: f.Target,
			Detected: fmtSecOrDash(f.DetectedS), Recovered: fmtSecOrDash(f.RecoveredS),
			Reading: faultReading(f, rows), Failed: f.Failed,
		}
		if f.Failed {
			out[i].Reading = "FAILED, not carried out: " + orDash(f.Error) + "; " + out[i].Reading
		}
	}
	return out
}

// faultReading says what happened to one fault, in up to three clauses joined by "; ":
//   - where it is on the charts, when it is not on them (injected outside the recorded seconds);
//   - when it was detected and recovered, relative to the injection (DetectedS - AtS and
//     RecoveredS - AtS; a time of 0 means not observed, a time before AtS is an inconsistent entry);
//   - what the recorded seconds show while it lasted: the seconds overlapping [AtS, RecoveredS),
//     or [AtS, end of the data) when it did not recover, with their failed decisions (errors,
//     failed open, failed closed) and overspend requests.
func faultReading(f results.Fault, rows []results.Interval) string {
	var parts []string
	var first, end float64 // the recorded seconds: [first, end)
	if len(rows) > 0 {
		first, end = rows[0].TS, rows[len(rows)-1].TS+1
		if !onAxis(f, first, end) {
			parts = append(parts, "injected outside the recorded "+fmtSec(first)+"–"+fmtSeconds(end)+", so not on the charts")
		}
	}
	detected, recovered := f.DetectedS != 0, f.RecoveredS != 0
	toDetect, toRecover := fmtSeconds(f.DetectedS-f.AtS), fmtSeconds(f.RecoveredS-f.AtS)
	switch {
	case detected && f.DetectedS < f.AtS:
		parts = append(parts, "detected_s "+fmtSec(f.DetectedS)+" is before at_s: the summary's fault entry is inconsistent")
	case recovered && f.RecoveredS < f.AtS:
		parts = append(parts, "recovered_s "+fmtSec(f.RecoveredS)+" is before at_s: the summary's fault entry is inconsistent")
	case recovered && f.RecoveredS == f.AtS:
		parts = append(parts, "recovered at injection: no interruption seen")
	case detected && recovered:
		parts = append(parts, "detected after "+toDetect+", recovered "+toRecover+" after injection")
	case recovered:
		parts = append(parts, "recovered "+toRecover+" after injection")
	case detected:
		parts = append(parts, "detected after "+toDetect+", no recovery seen before the run ended")
	default:
		parts = append(parts, "neither detection nor recovery recorded")
	}
	until := end // a fault that did not recover lasts to the end of the data
	if recovered {
		until = f.RecoveredS
	}
	if w, ok := faultWindow(rows, f.AtS, until); ok {
		parts = append(parts, "in "+fmtSec(w.from)+"–"+fmtSeconds(w.to)+": "+
			plural(w.failed, "failed decision")+", "+plural(w.overspend, "overspend request"))
	}
	return strings.Join(parts, "; ")
}

// window is what the recorded seconds overlapping a fault show.
type window struct {
	from, to          float64 // the overlapping seconds: [from, to)
	failed, overspend int64
}

// faultWindow sums the rows whose second [TS, TS+1) overlaps [at, until); ok is false when none
// does (an empty span, or one outside the data).
func faultWindow(rows []results.Interval, at, until float64) (w window, ok bool) {
	for _, r := range rows {
		if r.TS >= until || r.TS+1 <= at {
			continue
		}
		if !ok {
			w.from, ok = r.TS, true
		}
		w.to = r.TS + 1
		w.failed += r.Errors + r.FailedOpen + r.FailedClosed
		w.overspend += r.Overspend
	}
	return w, ok
}

// plural formats a count with its noun: 1 -> "1 failed decision", 37 -> "37 failed decisions".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmtInt(n) + " " + noun + "s"
}
