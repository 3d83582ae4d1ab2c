package results

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry. Latencies are recorded in whole microseconds from 1 µs to MaxLatency with
// 3 significant digits: any recorded value is off by at most 0.1% (one part in 1000). With these
// bounds the counts array is about 20 x 1024 int64s, ~160 KB per histogram.
const (
	// LowestLatencyUs is the smallest discernible latency, in microseconds.
	LowestLatencyUs = 1
	// MaxLatency is the largest latency the histogram tracks; larger ones are clamped to it.
	MaxLatency = 5 * time.Minute
	// SignificantDigits is the HDR precision: 3 digits = 0.1% relative error.
	SignificantDigits = 3
)

// maxLatencyUs is MaxLatency in the histogram's unit.
const maxLatencyUs = int64(MaxLatency / time.Microsecond)

// Histogram records latencies in an HDR histogram (microsecond units, 1 µs to MaxLatency,
// 3 significant digits) and answers quantiles in milliseconds. Record allocates nothing. Not safe
// for concurrent use: give each worker its own and Merge them, as the engine does per second.
type Histogram struct {
	h *hdrhistogram.Histogram
	// clamped counts values above MaxLatency recorded as MaxLatency (and negative ones as 0).
	clamped int64
}

// PercentilePoint is one point of a percentile curve: Percentile in [0, 100] and the latency at
// or below which that share of requests completed, in ms.
type PercentilePoint struct {
	Percentile float64
	Ms         float64
}

// NewHistogram returns an empty Histogram with the package's geometry.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(LowestLatencyUs, maxLatencyUs, SignificantDigits)}
}

// Record adds one latency. It is rounded to the nearest microsecond; a latency above MaxLatency
// is recorded as MaxLatency and a negative one as 0, and both are counted in Clamped: values are
// clamped, never dropped, so Count always equals the number of Record calls.
func (h *Histogram) Record(d time.Duration) {
	var us int64
	switch {
	case d > MaxLatency:
		us = maxLatencyUs
		h.clamped++
	case d < 0:
		h.clamped++
	default:
		us = int64((d + time.Microsecond/2) / time.Microsecond)
	}
	// In range by construction, so RecordValue cannot fail (and allocates no error).
	_ = h.h.RecordValue(us)
}

// Merge adds every value recorded in o to h. Both have the package's geometry, so nothing is
// dropped.
func (h *Histogram) Merge(o *Histogram) {
	h.h.Merge(o.h)
	h.clamped += o.clamped
}

// Reset empties h for reuse (the engine resets its per-second histograms).
func (h *Histogram) Reset() {
	h.h.Reset()
	h.clamped = 0
}

// ForEach calls fn for each latency bucket that holds recordings, fastest first, with the
// bucket's value (its highest equivalent latency, the one quantiles report: within the 0.1%
// precision of any value in it) and its count: how a consumer that wants the latencies, not just
// quantiles, reads them back (a Prometheus histogram fed by an HTTP driver's seconds).
func (h *Histogram) ForEach(fn func(d time.Duration, count int64)) {
	for _, b := range h.h.Distribution() {
		if b.Count > 0 {
			fn(time.Duration(b.To)*time.Microsecond, b.Count)
		}
	}
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Clamped is the number of values recorded outside [0, MaxLatency] and clamped into it.
func (h *Histogram) Clamped() int64 { return h.clamped }

// QuantileMs returns the latency at percentile q, in ms. q is in [0, 100] as in hdrhistogram
// (99.9 is the 99.9th percentile); the value is the highest value equivalent to the recorded one
// at 3 significant digits, so it may exceed the true value by up to 0.1%. 0 when h is empty.
func (h *Histogram) QuantileMs(q float64) float64 {
	return usToMs(h.h.ValueAtQuantile(q))
}

// MaxMs returns the largest recorded latency in ms (within 0.1%), 0 when h is empty.
func (h *Histogram) MaxMs() float64 {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return usToMs(h.h.Max())
}

// percentileTicks is the number of curve points per halving of the distance to 100%, the
// "ticks per half distance" of HdrHistogram's percentile output: 5 gives ~5 points between
// 0% and 50%, 5 more to 75%, and so on into the tail.
const percentileTicks = 5

// Percentiles returns the percentile curve, from 0% to 100% with points that get denser toward
// the tail, as HdrHistogram's percentile distribution does. Empty when h is empty.
func (h *Histogram) Percentiles() []PercentilePoint {
	if h.h.TotalCount() == 0 {
		return nil
	}
	dist := h.h.CumulativeDistributionWithTicks(percentileTicks)
	out := make([]PercentilePoint, len(dist))
	for i, b := range dist {
		out[i] = PercentilePoint{Percentile: b.Quantile, Ms: usToMs(b.ValueAt)}
	}
	return out
}

func usToMs(us int64) float64 { return float64(us) / 1000 }
