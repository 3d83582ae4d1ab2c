package attack

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/check"
	"ratelab/run/engine"
	"ratelab/scenarios"
	"ratelab/workload"
	"ratelab/workload/trace"
)

// Defaults of Options' zero fields.
const (
	DefaultRate       = 1000.0
	DefaultDuration   = 10 * time.Second
	DefaultTenants    = 1000
	DefaultTheta      = workload.DefaultTheta
	DefaultSeed       = 1
	DefaultEndpoint   = "api"
	DefaultKeyHeader  = "X-API-Key"
	DefaultWorkers    = 32
	DefaultMaxWorkers = 512
	DefaultTimeout    = 10 * time.Second
	// MaxKeys bounds tenants x endpoints: the overspend envelope keeps ~50 bytes per key.
	MaxKeys = 50_000_000
	// ReqHeader carries the targeter's request index to the RoundTripper, which ties it to
	// vegeta's Seq (vegeta's Result carries neither the tenant nor the request headers).
	ReqHeader = "X-Ratelab-Req"
)

// ErrNotLoopback reports a target URL off 127.0.0.0/8, ::1 and localhost without AllowRemote.
var ErrNotLoopback = errors.New("attack: URL is not loopback")

// ErrInvalid wraps every Options.Validate problem.
var ErrInvalid = errors.New("attack: invalid option")

// Options configure Run. Zero fields take the defaults above.
type Options struct {
	// URL is the base URL; each request goes to URL + "/" + endpoint. Loopback only unless
	// AllowRemote.
	URL         string
	AllowRemote bool

	// Rate (requests/s), Duration, Pacer ("constant" or "poisson"), Tenants, Theta (Zipf skew)
	// and Seed generate the schedule as a scenario would; ignored with Trace.
	Rate     float64
	Duration time.Duration
	Pacer    string
	// Stages, when set, ramp the offered rate from Rate (the start rate, 0 allowed) as
	// workload.NewProfile does; Duration cuts them or holds their last rate.
	Stages  []workload.Stage
	Tenants int
	Theta   float64
	Seed    uint64
	// Endpoints and Weights are the endpoint mix (default one endpoint, DefaultEndpoint);
	// Weights nil means equal weights.
	Endpoints []string
	Weights   []float64
	// TenantPrefix names generated tenants: the API key of tenant i is TenantPrefix + i
	// (default trace.DefaultTenantPrefix, the scenario engine's names).
	TenantPrefix string

	// Trace, when set, is replayed instead of a generated schedule, Speed times faster
	// (default 1), with its tenants' names as API keys.
	Trace *trace.Trace
	Speed float64
	// NoTenantOrder turns off tenant ordering, which is on with a Trace: each request waits
	// until the previous request of the same tenant has been answered, so the target decides
	// every tenant's requests in trace order (a wait shows in the latency, which counts from
	// the intended start).
	NoTenantOrder bool
	// TimeHeader, if set, sends each request's trace time (Unix ms, unscaled by Speed) in
	// this header, and the overspend envelopes judge at that time instead of at the two ends of
	// the send-to-response interval: for a target whose limiter clock follows the header,
	// replays and their overspend are exact.
	TimeHeader string
	// CostHeader, if set, sends each request's cost in this header; without it every
	// request must cost 1 (the target cannot know another cost).
	CostHeader string

	// SLO is checked on the attack's summary (its SLO section, as `ratelab run` writes it); the
	// zero SLO has no checks and passes. A scenario's attack (RunScenario) is judged by the
	// scenario's own SLO instead.
	SLO scenarios.SLO

	// Policy is the declared per-(tenant, endpoint) bucket the responses are judged against.
	Policy limiter.BucketPolicy
	// Window, when its Limit is set, is the declared policy instead of Policy: at most Limit
	// requests per tenant and endpoint in any Window (a sliding window).
	Window WindowPolicy
	// KeyHeader carries the tenant's API key (default DefaultKeyHeader), as KeyFormat says.
	KeyHeader string
	// KeyFormat is the key header's value, KeyPlaceholder standing for the key (default
	// "{key}"; "Bearer {key}" with KeyHeader Authorization sends bearer tokens).
	KeyFormat string
	// Keys, when set, are the tenants' API keys: tenant i sends Keys[i], and Tenants must be
	// len(Keys) (0 takes it). The keys are secrets: the run names tenants tenant-i, never by key.
	Keys []string

	// Method is every request's HTTP method (default GET); Body its body (none when empty).
	Method string
	Body   []byte
	// Header is sent with every request besides the key header. Sensitive values (see
	// Sensitive) are never printed or written.
	Header http.Header
	// CA is a PEM bundle of CA certificates trusted for https URLs in addition to the system's
	// roots; Insecure skips certificate verification instead.
	CA       []byte
	Insecure bool

	// Workers and MaxWorkers bound vegeta's workers (defaults DefaultWorkers, DefaultMaxWorkers).
	// When all MaxWorkers are busy vegeta sends late; the lateness is in the latency.
	Workers, MaxWorkers uint64
	// Timeout bounds one request (default DefaultTimeout).
	Timeout time.Duration

	// Out is the run directory (default out/attack-<yyyymmdd-hhmmss>).
	Out string
	// Version is ratelab's version, for the summary.
	Version string
	// Logf receives progress lines; OnInterval every per-second row as it is written.
	Logf       func(format string, args ...any)
	OnInterval func(results.Interval)
	// OnProgress, when set, receives a live snapshot about every 250 ms while the attack runs
	// (elapsed, requests planned so far as Offered and answered so far as Sent), from the
	// collecting goroutine.
	OnProgress func(results.Progress)
	// OnHistogram, when set, hears each written second's latency histogram (its served
	// requests) right after the row; the histogram is the collector's: read it, keep nothing.
	OnHistogram func(sec int, h *results.Histogram)

	// hooks, set by RunScenario only, tie the attack to a scenario's engine session.
	hooks *runHooks
}

// runHooks tie an attack to a scenario's engine session (RunScenario only).
type runHooks struct {
	// name names the run directory.
	name string
	// urls are the base URLs of the scenario's gateways: request i goes to urls[i % len].
	urls []string
	// newChecker returns the session's envelope for the attack's keys (tenant names by index,
	// endpoint names): the scenario's limiter kind, each key's tariff.
	newChecker func(tenants, endpoints []string) check.Checker
	// start marks the run's time zero (the session's faults and per-second marks).
	start func(base time.Time)
	// fillRow adds what the session measured to each row before it is written.
	fillRow func(sec int, iv *results.Interval)
	// consumers hear every record once it is judged and booked (engine.Options.Consumers).
	consumers []engine.Consumer
}

// name is the run's name: the scenario's, or attack / replay.
func (o Options) name() string {
	switch {
	case o.hooks != nil:
		return o.hooks.name
	case o.Trace != nil:
		return "replay"
	}
	return "attack"
}

// urls are the base URLs the attack sends to, one per gateway.
func (o Options) urls() []string {
	if o.hooks != nil && len(o.hooks.urls) > 0 {
		return o.hooks.urls
	}
	return []string{o.URL}
}

func (o Options) withDefaults() Options {
	if len(o.Stages) == 0 {
		o.Rate = cmp.Or(o.Rate, DefaultRate)
		o.Duration = cmp.Or(o.Duration, DefaultDuration)
	} else {
		o.Duration = cmp.Or(o.Duration, workload.StagesDuration(o.Stages))
	}
	o.Pacer = cmp.Or(o.Pacer, "constant")
	if o.Tenants == 0 && len(o.Keys) > 0 {
		o.Tenants = len(o.Keys)
	}
	o.Tenants = cmp.Or(o.Tenants, DefaultTenants)
	o.Theta = cmp.Or(o.Theta, DefaultTheta)
	o.Seed = cmp.Or(o.Seed, DefaultSeed)
	if len(o.Endpoints) == 0 {
		o.Endpoints = []string{DefaultEndpoint}
	}
	o.TenantPrefix = cmp.Or(o.TenantPrefix, trace.DefaultTenantPrefix)
	o.Speed = cmp.Or(o.Speed, 1)
	o.KeyHeader = cmp.Or(o.KeyHeader, DefaultKeyHeader)
	o.KeyFormat = cmp.Or(o.KeyFormat, KeyPlaceholder)
	o.Method = cmp.Or(o.Method, http.MethodGet)
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.MaxWorkers = cmp.Or(o.MaxWorkers, DefaultMaxWorkers)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Validate reports every problem of o (after defaults) at once, each naming the option, the
// value and the fix.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...))
	}
	// A scenario's attack (hooks) goes to its own gateways and is judged by its own envelope.
	for _, u := range o.urls() {
		if err := CheckURL(u, o.AllowRemote); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case o.hooks != nil:
	case o.Window.Limit != 0 || o.Window.Window != 0:
		if err := o.Window.Validate(); err != nil {
			bad("policy: %v; declare the target's window, e.g. limit=100,window=1s", err)
		}
	default:
		if err := o.Policy.Validate(); err != nil {
			bad("policy: %v; declare the target's limit, e.g. rate=50,burst=100", err)
		}
	}
	o.validateRequest(bad)
	if o.Trace == nil {
		if len(o.Stages) > 0 {
			if _, err := workload.NewProfile(o.Rate, o.Stages, cmp.Or(o.Duration, workload.StagesDuration(o.Stages))); err != nil {
				bad("stages: %v", err)
			}
		} else if !(o.Rate > 0) || math.IsInf(o.Rate, 0) {
			bad("rate %v: want requests per second > 0, e.g. 2000", o.Rate)
		}
		if o.Duration < 0 {
			bad("duration %v: want > 0, e.g. 10s", o.Duration)
		}
		if o.Pacer != "constant" && o.Pacer != "poisson" {
			bad("pacer %q: want constant or poisson", o.Pacer)
		}
		if o.Tenants < 1 || o.Tenants*len(o.Endpoints) > MaxKeys {
			bad("tenants %d: want 1..%d (tenants x endpoints <= %d)", o.Tenants, MaxKeys/max(1, len(o.Endpoints)), MaxKeys)
		}
		if !(o.Theta > 0 && o.Theta <= workload.MaxTheta) {
			bad("zipf %v: want a skew in (0, %v], e.g. 0.99", o.Theta, workload.MaxTheta)
		}
		if o.Weights != nil && len(o.Weights) != len(o.Endpoints) {
			bad("weights: %d for %d endpoints; give one per endpoint", len(o.Weights), len(o.Endpoints))
		}
	} else {
		if len(o.Trace.Requests) == 0 {
			bad("trace: no records")
		}
		if !(o.Speed > 0) || math.IsInf(o.Speed, 0) {
			bad("speed %v: want a factor > 0, e.g. 2 for twice as fast", o.Speed)
		}
		if o.CostHeader == "" {
			for i, r := range o.Trace.Requests {
				if r.Cost != 1 {
					bad("trace record %d costs %d tokens: set a cost header (--cost-header NAME) the target reads, or replay a trace of cost-1 requests", i, r.Cost)
					break
				}
			}
		}
	}
	if o.Workers > o.MaxWorkers {
		bad("workers %d: more than max workers %d", o.Workers, o.MaxWorkers)
	}
	if o.Timeout < 0 {
		bad("timeout %v: want > 0, e.g. 10s", o.Timeout)
	}
	return errors.Join(errs...)
}

// CheckURL refuses a URL that is not absolute http(s), and one whose host is not a loopback
// IP or "localhost" unless allowRemote: ratelab sends load to this machine only by default.
func CheckURL(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: url %q: want an absolute http URL such as http://127.0.0.1:8080/", ErrInvalid, raw)
	}
	host := u.Hostname()
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: url %q: host %q is not on this machine; load tests here stay on loopback (127.0.0.1), pass --allow-remote to attack it anyway",
		ErrNotLoopback, raw, host)
}
