package faults

import (
	"math"
	"ratelab/results"
)

// recoveredBelow is the share of a second's requests that may still meet trouble in a recovered
// second: a loaded 2-core machine times out the odd request with no fault at all.
const recoveredBelow = 0.01

// detectWithinS bounds how late after a fault ends (AtS + ForS) its first trouble may come and
// still be its own. Every fault here shows at once or within the cluster's failure detection
// (cluster-node-timeout, 1-5 s): a timeout two minutes after a 5 ms latency fault ended is the
// shared machine's, not the fault's.
const detectWithinS = 10

// cleanForS is how long trouble must stay under the noise floor for a fault to count as
// recovered (or until the next fault or the end, if sooner). A lone bad second much later, a
// stall of the shared machine, does not move recovered_s; trouble that comes back within this
// window does.
const cleanForS = 30

// MeasureRecovery fills each fault's detected_s (the first second with store errors, redirects
// or fail-policy decisions from the fault's start to detectWithinS after its end, and before the
// next fault) and recovered_s (the start of the first second after detection from which such
// trouble stays under 1% of the requests for cleanForS, or until the next fault or the end).
// Both stay 0 when not observed: a fault never detected has no recovery, one whose trouble never
// settles has recovered_s 0.
func MeasureRecovery(faults []results.Fault, rows []results.Interval) {
	trouble := func(r results.Interval) int64 {
		return r.Errors + r.Timeout + r.Moved + r.Ask + r.NoScript + r.ClusterDown + r.TryAgain + r.Conn + r.FailedOpen + r.FailedClosed
	}
	detectedIn := func(r results.Interval) bool { return trouble(r) > 0 }
	bad := func(r results.Interval) bool { return float64(trouble(r)) > recoveredBelow*float64(max(r.Sent, 1)) }
	for i := range faults {
		f := &faults[i]
		end := len(rows)
		if i+1 < len(faults) {
			// The second in which the next fault starts is that fault's.
			end = min(end, max(int(faults[i+1].AtS), int(f.AtS)+1))
		}
		start := int(f.AtS)
		detectEnd := min(end, int(math.Ceil(f.AtS+f.ForS))+detectWithinS)
		det := -1
		for s := start; s < detectEnd; s++ {
			if detectedIn(rows[s]) {
				det = s
				break
			}
		}
		if det < 0 {
			continue
		}
		f.DetectedS = max(float64(det), f.AtS)
		// The first second from which the next cleanForS (bounded by end) are all clean.
		rec := det
		for s := det; s < end && s < rec+cleanForS; s++ {
			if bad(rows[s]) {
				rec = s + 1
			}
		}
		switch {
		case rec == det:
			// Trouble stayed under the noise floor throughout: recovered as soon as detected.
			f.RecoveredS = f.DetectedS
		case rec < len(rows) && (i+1 >= len(faults) || rec < end):
			f.RecoveredS = float64(rec)
		}
	}
}
