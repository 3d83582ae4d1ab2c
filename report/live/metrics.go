package live

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ratelab/results"
)

// The metric names; docs/metrics.md ("Live metrics") says what each equals in summary.json.
const (
	MetricRunInfo      = "ratelab_run_info"
	MetricOffered      = "ratelab_offered_requests_total"
	MetricSent         = "ratelab_sent_requests_total"
	MetricDropped      = "ratelab_dropped_requests_total"
	MetricDecisions    = "ratelab_decisions_total"
	MetricLate         = "ratelab_late_decisions_total"
	MetricRedisErrors  = "ratelab_redis_errors_total"
	MetricOverspend    = "ratelab_overspend_requests_total"
	MetricFalseDenies  = "ratelab_false_denies_total"
	MetricCentralOps   = "ratelab_central_ops_total"
	MetricLatency      = "ratelab_latency_seconds"
	MetricOfferedRate  = "ratelab_offered_rate_per_second"
	MetricAchievedRate = "ratelab_achieved_rate_per_second"
	MetricInFlight     = "ratelab_in_flight_requests"
	MetricFaultActive  = "ratelab_fault_active"
	MetricFinished     = "ratelab_run_finished"
	MetricRowLatency   = "ratelab_row_latency_seconds"
)

// Labels every series carries (constant labels), and the variable ones.
const (
	LabelScenario = "scenario"
	LabelRunID    = "run_id"
	labelOutcome  = "outcome"
	labelKind     = "kind"
	labelQuantile = "quantile"
)

// rowQuantiles are the quantile label values of MetricRowLatency, in the order of rowLatency:
// the percentiles a row carries (p50, p90, p99, p99.9, max).
var rowQuantiles = [...]string{"0.5", "0.9", "0.99", "0.999", "1"}

// outcomeNames are the outcome label values of MetricDecisions, in the order of counts.outcomes.
var outcomeNames = [...]string{"allowed", "denied", "failed_open", "failed_closed", "error"}

// errorKinds are the kind label values of MetricRedisErrors, in the order of counts.errs: the
// fields of results.Errors.
var errorKinds = [...]string{"timeout", "moved", "ask", "tryagain", "clusterdown", "noscript", "conn", "unreplicated", "other"}

// LatencyBuckets are the classic buckets of MetricLatency, upper bounds in seconds: 100 µs to
// 10 s, about x2.5 apart, from a decision on loopback to a request stuck behind a failover.
var LatencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// NativeBucketFactor is MetricLatency's native-histogram bucket growth: client_golang picks
// schema 3, buckets 2^(1/8) (~9%) apart. The bucket count is unbounded (the latencies span
// microseconds to minutes, a few hundred buckets at most), so the histogram never resets and
// its count stays exact.
const NativeBucketFactor = 1.1

// counts are a run's cumulative counters.
type counts struct {
	offered, sent, dropped, late       int64
	outcomes                           [len(outcomeNames)]int64
	errs                               [len(errorKinds)]int64
	overspend, falseDenies, centralOps int64
}

// addRow adds a per-second row's counts.
func (c *counts) addRow(iv *results.Interval) {
	c.offered += iv.Offered
	c.sent += iv.Sent
	c.dropped += iv.Dropped
	c.late += iv.Late
	c.outcomes = [...]int64{c.outcomes[0] + iv.Allowed, c.outcomes[1] + iv.Denied,
		c.outcomes[2] + iv.FailedOpen, c.outcomes[3] + iv.FailedClosed, c.outcomes[4] + iv.Errors}
	e := [...]int64{iv.Timeout, iv.Moved, iv.Ask, iv.TryAgain, iv.ClusterDown, iv.NoScript, iv.Conn, iv.Unreplicated, iv.Other}
	for i, n := range e {
		c.errs[i] += n
	}
	c.overspend += iv.Overspend
	c.falseDenies += iv.FalseDenies
	c.centralOps += iv.CentralOps
}

// summaryCounts are the totals of summary.json that the counters end at.
func summaryCounts(s *results.Summary) counts {
	o, e := s.Outcomes, s.Errors
	return counts{
		offered: s.Load.Offered, sent: s.Load.Sent, dropped: s.Load.Dropped, late: s.Load.Late,
		outcomes:    [...]int64{o.Allowed, o.Denied, o.FailedOpen, o.FailedClosed, o.Errors},
		errs:        [...]int64{e.Timeout, e.Moved, e.Ask, e.TryAgain, e.ClusterDown, e.NoScript, e.Conn, e.Unreplicated, e.Other},
		overspend:   s.Overspend.Requests,
		falseDenies: s.Overspend.FalseDenies,
		centralOps:  s.Central.Ops,
	}
}

// Metrics is a run's live metrics on a registry of its own (never the global one). Feed it with
// OnInterval, OnProgress and ObserveHistogram while the run goes and Finish at its end. Counters
// and gauges are computed at scrape time from the fed totals; the latency histogram is
// client_golang's own. Safe for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	latency prometheus.Histogram
	d       descs

	mu       sync.Mutex
	rows     counts           // the sums of the rows so far
	prog     results.Progress // the latest snapshot
	final    *counts          // the summary's totals, once Finish ran
	offRate  float64
	achRate  float64
	rowLat   [len(rowQuantiles)]float64 // seconds
	faults   map[string]bool            // every fault kind seen: whether it is active now
	finished bool
}

// descs are the descriptors of the metrics Metrics computes at scrape time.
type descs struct {
	info, offered, sent, dropped, late, decisions, errs  *prometheus.Desc
	overspend, falseDenies, centralOps, offRate, achRate *prometheus.Desc
	inFlight, fault, finished, rowLat                    *prometheus.Desc
}

// NewMetrics returns the metrics of run runID of scenario, every series labelled with both;
// info adds labels to MetricRunInfo only (version, mode...).
func NewMetrics(scenario, runID string, info map[string]string) *Metrics {
	cl := prometheus.Labels{LabelScenario: scenario, LabelRunID: runID}
	infoLabels := prometheus.Labels{}
	for k, v := range info {
		infoLabels[k] = v
	}
	for k, v := range cl {
		infoLabels[k] = v
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cl)
	}
	m := &Metrics{reg: prometheus.NewRegistry(), faults: map[string]bool{}}
	m.d = descs{
		info:        prometheus.NewDesc(MetricRunInfo, "The run's scenario, run id and build; always 1.", nil, infoLabels),
		offered:     desc(MetricOffered, "Requests the schedule offered (summary load.offered)."),
		sent:        desc(MetricSent, "Requests started: offered minus dropped (summary load.sent)."),
		dropped:     desc(MetricDropped, "Requests the generator did not start (summary load.dropped)."),
		late:        desc(MetricLate, "Decisions answered after the run's window ended (summary load.late)."),
		decisions:   desc(MetricDecisions, "Decisions by outcome (summary outcomes).", labelOutcome),
		errs:        desc(MetricRedisErrors, "Failed store calls and redirects by kind (summary errors).", labelKind),
		overspend:   desc(MetricOverspend, "Allowed requests beyond the envelope (summary overspend.requests)."),
		falseDenies: desc(MetricFalseDenies, "Denied requests the envelope had tokens for (summary overspend.false_denies)."),
		centralOps:  desc(MetricCentralOps, "Decision operations on the shared store (summary central.ops)."),
		offRate:     desc(MetricOfferedRate, "Requests offered in the last written second; the run's offered_rps after the end."),
		achRate:     desc(MetricAchievedRate, "Decisions answered in the window in the last written second; the run's achieved_rps after the end."),
		inFlight:    desc(MetricInFlight, "Decisions started and not yet finished."),
		fault:       desc(MetricFaultActive, "1 while a fault of this kind is active, 0 after.", labelKind),
		finished:    desc(MetricFinished, "1 once the counters hold the summary's totals (the run is over), 0 before."),
		rowLat:      desc(MetricRowLatency, "Latency percentiles of the answered requests of the last written second; the run's latency_served_ms after the end, seconds.", labelQuantile),
	}
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                        MetricLatency,
		Help:                        "Latency of the answered requests from their intended start, seconds.",
		ConstLabels:                 cl,
		Buckets:                     LatencyBuckets,
		NativeHistogramBucketFactor: NativeBucketFactor,
	})
	m.reg.MustRegister(m, m.latency)
	return m
}

// Registry returns the registry the metrics are on: the Gatherer of the server and the pusher.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// OnInterval adds a per-second row (the drivers' OnInterval).
func (m *Metrics) OnInterval(iv results.Interval) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return
	}
	m.rows.addRow(&iv)
	m.offRate = float64(iv.Offered)
	m.achRate = float64(iv.Achieved())
	m.rowLat = msToSeconds(iv.P50Ms, iv.P90Ms, iv.P99Ms, iv.P999Ms, iv.MaxMs)
}

// msToSeconds returns the five percentiles of a row or a summary in seconds.
func msToSeconds(p50, p90, p99, p999, maxMs float64) [len(rowQuantiles)]float64 {
	return [...]float64{p50 / 1e3, p90 / 1e3, p99 / 1e3, p999 / 1e3, maxMs / 1e3}
}

// OnProgress takes a live snapshot (the drivers' OnProgress): offered, sent and dropped so far,
// decisions in flight and the active fault.
func (m *Metrics) OnProgress(p results.Progress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return
	}
	m.prog = p
	for k := range m.faults {
		m.faults[k] = false
	}
	if p.Fault != "" {
		m.faults[p.Fault] = true
	}
}

// ObserveHistogram records every latency h holds, each at its HDR bucket's value (within 0.1%):
// a second's histogram of served requests, as the driver writes it beside the second's row
// (engine.Options.OnHistogram, every driver). Call it once per second, from one goroutine.
func (m *Metrics) ObserveHistogram(h *results.Histogram) {
	h.ForEach(func(d time.Duration, n int64) {
		s := d.Seconds()
		for range n {
			m.latency.Observe(s)
		}
	})
}

// Finish sets every counter to sum's total, which the rows may fall short of (decisions answered
// after their second's row was written count in the summary only), the rates to the run's, the
// faults to inactive and the in-flight gauge to 0. Later rows and snapshots are ignored.
func (m *Metrics) Finish(sum *results.Summary) {
	c := summaryCounts(sum)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.final, m.finished = &c, true
	m.offRate, m.achRate = sum.Load.OfferedRPS, sum.Load.AchievedRPS
	l := sum.LatencyServedMs
	m.rowLat = msToSeconds(l.P50, l.P90, l.P99, l.P999, l.Max)
	m.prog.InFlight = 0
	for k := range m.faults {
		m.faults[k] = false
	}
}

// Describe sends the descriptors of the computed metrics.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	d := m.d
	for _, x := range []*prometheus.Desc{d.info, d.offered, d.sent, d.dropped, d.late, d.decisions,
		d.errs, d.overspend, d.falseDenies, d.centralOps, d.offRate, d.achRate, d.inFlight, d.fault, d.finished, d.rowLat} {
		ch <- x
	}
}

// Collect sends the computed metrics: the summary's totals after Finish, before it the rows'
// sums with offered, sent and dropped from the latest snapshot where it is ahead of the rows.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	c := m.current()
	offRate, achRate, inFlight, finished, rowLat := m.offRate, m.achRate, m.prog.InFlight, 0.0, m.rowLat
	if m.final != nil {
		finished = 1
	}
	kinds := make([]string, 0, len(m.faults))
	for k := range m.faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	active := make([]bool, len(kinds))
	for i, k := range kinds {
		active[i] = m.faults[k]
	}
	m.mu.Unlock()

	d := m.d
	counter := func(desc *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	gauge(d.info, 1)
	counter(d.offered, c.offered)
	counter(d.sent, c.sent)
	counter(d.dropped, c.dropped)
	counter(d.late, c.late)
	for i, name := range outcomeNames {
		counter(d.decisions, c.outcomes[i], name)
	}
	for i, name := range errorKinds {
		counter(d.errs, c.errs[i], name)
	}
	counter(d.overspend, c.overspend)
	counter(d.falseDenies, c.falseDenies)
	counter(d.centralOps, c.centralOps)
	gauge(d.offRate, offRate)
	gauge(d.achRate, achRate)
	gauge(d.inFlight, float64(inFlight))
	gauge(d.finished, finished)
	for i, q := range rowQuantiles {
		gauge(d.rowLat, rowLat[i], q)
	}
	for i, k := range kinds {
		v := 0.0
		if active[i] {
			v = 1
		}
		gauge(d.fault, v, k)
	}
}

// current is the counters' values now; m.mu is held.
func (m *Metrics) current() counts {
	if m.final != nil {
		return *m.final
	}
	c := m.rows
	c.offered = max(c.offered, m.prog.Offered)
	c.sent = max(c.sent, m.prog.Sent)
	c.dropped = max(c.dropped, m.prog.Dropped)
	return c
}
