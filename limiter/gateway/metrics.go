package gateway

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"ratelab/limiter"
)

// DefaultMaxEndpointLabels bounds the distinct endpoint label values of a Metrics. Endpoints
// come from request paths, which clients choose: past the bound every new endpoint is counted
// under OtherEndpoint, so a scan of random paths cannot grow the series without limit (nor put
// a key someone pasted into a path into a label for long).
const DefaultMaxEndpointLabels = 64

// OtherEndpoint is the endpoint label of endpoints past the label bound, or not valid UTF-8.
const OtherEndpoint = "other"

// The outcome label values of ratelab_gateway_decisions_total.
const (
	outcomeAllowed = iota
	outcomeDenied
	outcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"allowed", "denied", "error"}

// SourceNone is the source label of a decision that ended in an error: no source decided it.
const SourceNone = "none"

// sourceNames are the source label values: limiter.Source's names by value, then SourceNone.
// A Source beyond the names counts under its String ("unknown"), the entry before SourceNone.
var sourceNames = func() []string {
	var names []string
	for s := limiter.Source(0); ; s++ {
		name := s.String()
		names = append(names, name)
		if name == "unknown" {
			return append(names, SourceNone)
		}
	}
}()

// sourceIndex is the index in sourceNames of a decision's source; sourceNoneIndex of an error.
func sourceIndex(s limiter.Source) int { return min(int(s), len(sourceNames)-2) }

var sourceNoneIndex = len(sourceNames) - 1

// decisionBuckets are the decision-latency histogram's upper bounds in seconds: 50 us to 1 s,
// about x2.5 apart: from a central decision on loopback up to a timeout, which sits at the
// limiter's deadline (DefaultTimeout in `ratelab gateway`).
var decisionBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
}

// Metrics is the gateway's Prometheus instrumentation, on a registry of its own (never the
// global one):
//
//	ratelab_gateway_decisions_total{endpoint,outcome,source}  outcome = allowed | denied | error;
//	                                                          source = limiter.Source's name, none on error
//	ratelab_gateway_decision_seconds{outcome}                 histogram of the limiter call's duration
//	ratelab_gateway_unauthorized_total                        requests answered 401 (no or unknown key)
//	ratelab_build_info{version,commit,go}                     1 (SetBuildInfo)
//
// plus the Go and process collectors. Labels never carry an API key or a tenant. A nil
// *Metrics records nothing. Safe for concurrent use.
type Metrics struct {
	reg          *prometheus.Registry
	decisions    *prometheus.CounterVec
	seconds      [numOutcomes]prometheus.Observer
	unauth       prometheus.Counter
	build        *prometheus.GaugeVec
	maxEndpoints int

	mu        sync.RWMutex
	endpoints map[string]*endpointCounters
}

// endpointCounters are one endpoint label's decision counters by outcome and source index,
// created on first use so that only the pairs that happen make series.
type endpointCounters struct {
	label string
	c     [numOutcomes][]prometheus.Counter
}

// NewMetrics returns a Metrics on a new registry, with at most DefaultMaxEndpointLabels
// endpoint label values.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelab_gateway_decisions_total",
			Help: "Rate-limit decisions by endpoint, outcome (allowed, denied, error) and source (central, lease, local, fail-open, fail-closed; none on error).",
		}, []string{"endpoint", "outcome", "source"}),
		unauth: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ratelab_gateway_unauthorized_total",
			Help: "Requests answered 401: no API key, or one the key map does not know.",
		}),
		build: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ratelab_build_info",
			Help: "The ratelab build serving: its version, commit and Go version; always 1.",
		}, []string{"version", "commit", "go"}),
		maxEndpoints: DefaultMaxEndpointLabels,
		endpoints:    make(map[string]*endpointCounters),
	}
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ratelab_gateway_decision_seconds",
		Help:    "Duration of one limiter decision as seen by the gateway, by outcome, seconds.",
		Buckets: decisionBuckets,
	}, []string{"outcome"})
	for i, name := range outcomeNames {
		m.seconds[i] = seconds.WithLabelValues(name)
	}
	m.SetBuildInfo("dev", vcsCommit())
	m.reg.MustRegister(m.decisions, seconds, m.unauth, m.build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetBuildInfo sets ratelab_build_info's version and commit (the Go version is the runtime's);
// NewMetrics starts with version "dev" and the commit the build recorded, if any.
func (m *Metrics) SetBuildInfo(version, commit string) {
	m.build.Reset()
	m.build.WithLabelValues(version, commit, runtime.Version()).Set(1)
}

// vcsCommit is the commit the binary was built from, "" when the build did not record one.
func vcsCommit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}

// Registry returns the registry, to add collectors of the caller's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format (the /metrics route).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// record counts one decision of endpoint with outcome o, from the source of index src in
// sourceNames, that took d.
func (m *Metrics) record(endpoint string, o, src int, d time.Duration) {
	if m == nil {
		return
	}
	m.counter(endpoint, o, src).Inc()
	m.seconds[o].Observe(d.Seconds())
}

func (m *Metrics) unauthorized() {
	if m != nil {
		m.unauth.Inc()
	}
}

// counter returns endpoint's counter of outcome o and source src, creating it under the label
// bound. The lookup of a known one takes a read lock and allocates nothing.
func (m *Metrics) counter(endpoint string, o, src int) prometheus.Counter {
	m.mu.RLock()
	var c prometheus.Counter
	if e := m.endpoints[endpoint]; e != nil {
		c = e.c[o][src]
	}
	m.mu.RUnlock()
	if c != nil {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.endpoint(endpoint)
	if e.c[o][src] == nil {
		e.c[o][src] = m.decisions.WithLabelValues(e.label, outcomeNames[o], sourceNames[src])
	}
	return e.c[o][src]
}

// endpoint returns endpoint's counters, creating them under the label bound; m.mu is held.
func (m *Metrics) endpoint(endpoint string) *endpointCounters {
	if e := m.endpoints[endpoint]; e != nil {
		return e
	}
	label := endpoint
	if len(m.endpoints) >= m.maxEndpoints || !utf8.ValidString(endpoint) {
		label = OtherEndpoint
		if e := m.endpoints[OtherEndpoint]; e != nil {
			return e // not cached under endpoint: the map stays bounded too
		}
	}
	e := &endpointCounters{label: label}
	for o := range e.c {
		e.c[o] = make([]prometheus.Counter, len(sourceNames))
	}
	m.endpoints[label] = e
	return e
}
