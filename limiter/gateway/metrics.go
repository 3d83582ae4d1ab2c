package gateway

import (
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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

// decisionBuckets are the decision-latency histogram's upper bounds in seconds: 50 us to 1 s,
// about x2.5 apart: from a central decision on loopback up to a timeout, which sits at the
// limiter's deadline (DefaultTimeout in `ratelab gateway`).
var decisionBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
}

// Metrics is the gateway's Prometheus instrumentation, on a registry of its own (never the
// global one):
//
//	ratelab_gateway_decisions_total{endpoint,outcome}  outcome = allowed | denied | error
//	ratelab_gateway_decision_seconds                   histogram of the limiter call's duration
//	ratelab_gateway_unauthorized_total                 requests answered 401 (no or unknown key)
//
// plus the Go and process collectors. Labels never carry an API key or a tenant. A nil
// *Metrics records nothing. Safe for concurrent use.
type Metrics struct {
	reg          *prometheus.Registry
	decisions    *prometheus.CounterVec
	seconds      prometheus.Histogram
	unauth       prometheus.Counter
	maxEndpoints int

	mu        sync.RWMutex
	endpoints map[string]*[numOutcomes]prometheus.Counter
}

// NewMetrics returns a Metrics on a new registry, with at most DefaultMaxEndpointLabels
// endpoint label values.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelab_gateway_decisions_total",
			Help: "Rate-limit decisions by endpoint and outcome (allowed, denied, error).",
		}, []string{"endpoint", "outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ratelab_gateway_decision_seconds",
			Help:    "Duration of one limiter decision as seen by the gateway, seconds.",
			Buckets: decisionBuckets,
		}),
		unauth: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ratelab_gateway_unauthorized_total",
			Help: "Requests answered 401: no API key, or one the key map does not know.",
		}),
		maxEndpoints: DefaultMaxEndpointLabels,
		endpoints:    make(map[string]*[numOutcomes]prometheus.Counter),
	}
	m.reg.MustRegister(m.decisions, m.seconds, m.unauth,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, to add collectors of the caller's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format (the /metrics route).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// record counts one decision of endpoint with outcome o that took d.
func (m *Metrics) record(endpoint string, o int, d time.Duration) {
	if m == nil {
		return
	}
	m.counters(endpoint)[o].Inc()
	m.seconds.Observe(d.Seconds())
}

func (m *Metrics) unauthorized() {
	if m != nil {
		m.unauth.Inc()
	}
}

// counters returns endpoint's three outcome counters, creating them under the label bound.
// The lookup of a known endpoint takes a read lock and allocates nothing.
func (m *Metrics) counters(endpoint string) *[numOutcomes]prometheus.Counter {
	m.mu.RLock()
	c := m.endpoints[endpoint]
	m.mu.RUnlock()
	if c != nil {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c = m.endpoints[endpoint]; c != nil {
		return c
	}
	label := endpoint
	if len(m.endpoints) >= m.maxEndpoints || !utf8.ValidString(endpoint) {
		label = OtherEndpoint
		if c = m.endpoints[OtherEndpoint]; c != nil {
			return c // not cached under endpoint: the map stays bounded too
		}
	}
	c = new([numOutcomes]prometheus.Counter)
	for i, name := range outcomeNames {
		c[i] = m.decisions.WithLabelValues(label, name)
	}
	m.endpoints[label] = c
	return c
}
