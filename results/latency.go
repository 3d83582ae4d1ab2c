package results

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Ms is a latency in milliseconds. +Inf (Unmeasurable) means not measurable: a percentile that
// falls among the requests the generator dropped, which count as slower than any finite latency.
// JSON writes it as a number, or null for +Inf, and reads null back as +Inf, so a reader never
// takes "not measurable" for 0. NaN and -Inf are no latency: MarshalJSON and WriteSummary refuse
// them.
type Ms float64

// Unmeasurable is the Ms of a percentile that falls among the dropped requests.
var Unmeasurable = Ms(math.Inf(1))

// Measurable reports whether m is a latency (finite), not Unmeasurable.
func (m Ms) Measurable() bool { return !math.IsInf(float64(m), 0) && !math.IsNaN(float64(m)) }

// String is m to the microsecond, or "not measurable".
func (m Ms) String() string {
	if !m.Measurable() {
		return "not measurable"
	}
	return strconv.FormatFloat(float64(m), 'f', 3, 64)
}

// MarshalJSON writes m as a number, or null when it is Unmeasurable.
func (m Ms) MarshalJSON() ([]byte, error) {
	switch f := float64(m); {
	case math.IsInf(f, 1):
		return []byte("null"), nil
	case math.IsNaN(f) || math.IsInf(f, -1):
		return nil, fmt.Errorf("latency %v is not a latency (want a number, or +Inf for not measurable): %w", f, ErrInvalid)
	}
	return json.Marshal(float64(m))
}

// UnmarshalJSON reads a number, or null as Unmeasurable.
func (m *Ms) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = Unmeasurable
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*m = Ms(f)
	return nil
}

// Latency holds the latency percentiles over every OFFERED request, in milliseconds. Latency is
// completion minus the request's intended start (set by the pacer), so stalls are not hidden (no
// coordinated omission); a request that got no decision — dropped by the generator, or ended in
// an error no fail policy answered (a refused connection, a timeout, a 503) — counts as slower
// than any finite latency. A percentile at or below MeasurablePct is the decided requests'
// percentile at the same rank among the offered; one above it falls among the undecided and is
// Unmeasurable.
type Latency struct {
	// P50, P90, P99, P999 are percentiles over offered requests; Max is the slowest, which is
	// Unmeasurable as soon as one request got no decision.
	P50  Ms `json:"p50"`
	P90  Ms `json:"p90"`
	P99  Ms `json:"p99"`
	P999 Ms `json:"p999"`
	Max  Ms `json:"max"`
	// MeasurablePct is 100 x decided / offered: every percentile at or below it is measurable
	// (0 when nothing was offered).
	MeasurablePct float64 `json:"measurable_pct"`
	// Undecided is the number of offered requests that got no decision, counted as slower than
	// any latency. (A v2 summary's "dropped" counted the generator's drops only: ReadSummary
	// reads it here.)
	Undecided int64 `json:"undecided"`
}

// UnmarshalJSON reads a Latency, and a v2 summary's "dropped" as Undecided.
func (l *Latency) UnmarshalJSON(b []byte) error {
	type plain Latency
	var v struct {
		plain
		Dropped *int64 `json:"dropped"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*l = Latency(v.plain)
	if v.Dropped != nil && l.Undecided == 0 {
		l.Undecided = *v.Dropped
	}
	return nil
}

// ServedLatency holds the latency percentiles of the requests that were served — decided:
// allowed or denied, a fail policy's answer included, never an error — in milliseconds. All 0
// when nothing was decided.
type ServedLatency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	// Max is the largest latency recorded, clamped at MaxLatency.
	Max float64 `json:"max"`
}

// rankSlack absorbs the rounding of q x offered / answered, so that a percentile landing exactly
// on the last answered request (p99.9 of 1000 offered with 999 answered) stays measurable.
const rankSlack = 1e-12

// LatencyOf returns the percentiles over offered requests and over served (decided) ones, from
// the histogram of the decided requests' latencies and the count of offered requests that got
// no decision (a negative count reads as 0). With D decided of O = D + undecided offered, the
// q-th percentile over offered requests is the decided ones' percentile q x O / D when that is
// at most 100, and Unmeasurable above. With nothing offered every percentile is Unmeasurable:
// there is no latency to speak of. It is the one definition of both: a run, a second, a region
// and a merge all call it.
func LatencyOf(h *Histogram, undecided int64) (Latency, ServedLatency) {
	undecided = max(undecided, 0)
	served := h.Count()
	var s ServedLatency
	if served > 0 {
		s = ServedLatency{P50: h.QuantileMs(50), P90: h.QuantileMs(90), P99: h.QuantileMs(99), P999: h.QuantileMs(99.9), Max: h.MaxMs()}
	}
	offered := served + undecided
	l := Latency{Undecided: undecided, P50: Unmeasurable, P90: Unmeasurable, P99: Unmeasurable, P999: Unmeasurable, Max: Unmeasurable}
	if offered == 0 || served == 0 {
		return l, s
	}
	l.MeasurablePct = 100 * float64(served) / float64(offered)
	at := func(q float64) Ms {
		// The decided requests come first in rank order: the undecided ones are slower.
		p := q * float64(offered) / float64(served)
		if p > 100*(1+rankSlack) {
			return Unmeasurable
		}
		return Ms(h.QuantileMs(min(p, 100)))
	}
	l.P50, l.P90, l.P99, l.P999 = at(50), at(90), at(99), at(99.9)
	if undecided == 0 {
		l.Max = Ms(h.MaxMs())
	}
	return l, s
}

// servedAsOffered is the Latency of a run that counted no drops (a v1 summary): the served
// percentiles as they are, every one measurable.
func servedAsOffered(s ServedLatency) Latency {
	return Latency{P50: Ms(s.P50), P90: Ms(s.P90), P99: Ms(s.P99), P999: Ms(s.P999), Max: Ms(s.Max)}
}
