package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"ratelab/scenarios/cluster"
)

// Defaults for fields a scenario may leave out.
const (
	DefaultDuration    = 30 * time.Second
	DefaultSeed        = 1
	DefaultMaxInflight = 8192
	DefaultConcurrency = 256
	DefaultTimeout     = 50 * time.Millisecond
	DefaultPrimaries   = 3
	DefaultReplicas    = 1
	DefaultNodeTimeout = time.Second
	// DefaultLeaseRefresh is limiter.lease.refresh: refresh-ahead when a lease is down to a
	// quarter of its tokens or of its TTL.
	DefaultLeaseRefresh = 0.25
)

// Duration is a time.Duration written in YAML as a Go duration string ("30s", "250ms").
type Duration time.Duration

// UnmarshalYAML accepts a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration such as 30s or 250ms, got %q", n.Line, n.Value)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration; write it like 30s, 1m30s or 250ms", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Spec is one scenario: who sends what at which rate, against which limiter and cluster.
type Spec struct {
	// Name identifies the scenario in outputs. Required.
	Name string `yaml:"name"`
	// Description is one or two sentences for `ratelab scenarios list`.
	Description string `yaml:"description,omitempty"`
	// Duration of the measured run. Default 30s.
	Duration Duration `yaml:"duration,omitempty"`
	// Seed makes the request stream reproducible. Default 1.
	Seed      uint64     `yaml:"seed,omitempty"`
	Load      Load       `yaml:"load"`
	Tenants   Tenants    `yaml:"tenants"`
	Endpoints []Endpoint `yaml:"endpoints"`
	Policy    Policy     `yaml:"policy"`
	Limiter   LimiterCfg `yaml:"limiter,omitempty"`
	Cluster   ClusterCfg `yaml:"cluster,omitempty"`
	// Faults are injected into the cluster while the load runs.
	Faults []FaultSpec `yaml:"faults,omitempty"`
	// SLO is the run's pass/fail contract.
	SLO SLO `yaml:"slo,omitempty"`
	// Via is how requests reach the limiter: process (decided in-process by the engine, the
	// default) or http (ratelab's gateway served on a loopback port and driven by vegeta; see
	// docs/attack.md). Not every kind, policy and fault runs over HTTP: Validate says which.
	Via string `yaml:"via,omitempty"`
	// Trace, when set, replays a trace file instead of the seeded schedule: its requests, timing,
	// tenants and costs. load.rate, load.pacer, tenants and duration then come from the trace.
	Trace *TraceCfg `yaml:"trace,omitempty"`
}

// Load is the offered load. The generator is open loop: the schedule does not wait for answers.
type Load struct {
	// Rate is the offered rate in requests per second. Required, > 0.
	Rate float64 `yaml:"rate"`
	// Pacer is the arrival process: constant (default) or poisson.
	Pacer string `yaml:"pacer,omitempty"`
	// MaxInflight bounds requests scheduled but not yet answered; beyond it a request is counted as
	// dropped by the generator. Default 8192.
	MaxInflight int `yaml:"max_inflight,omitempty"`
	// Concurrency is the number of worker goroutines making decisions. Default 256 (0 = default).
	Concurrency int `yaml:"concurrency,omitempty"`
}

// Tenants is the key population and its skew.
type Tenants struct {
	// Count of tenants. Required, >= 1.
	Count int `yaml:"count"`
	// Distribution: zipf (default), uniform or hotspot.
	Distribution string `yaml:"distribution,omitempty"`
	// Theta is the Zipf exponent (> 0; 0.99 is the classic skew). Default 0.99.
	Theta float64 `yaml:"theta,omitempty"`
	// HotShare is, for hotspot, the share of traffic sent to the HotKeys hottest tenants.
	HotShare float64 `yaml:"hot_share,omitempty"`
	// HotKeys is, for hotspot, how many tenants are hot.
	HotKeys int `yaml:"hot_keys,omitempty"`
}

// Endpoint is one API endpoint, its share of traffic and what it does when the store fails.
type Endpoint struct {
	Name   string  `yaml:"name"`
	Weight float64 `yaml:"weight"`
	// Fail is what a decision does when Redis fails or times out: open (allow), closed (deny) or
	// local (an in-process emergency bucket at local_fraction of the rate). Empty: the failure is
	// an error outcome.
	Fail string `yaml:"fail,omitempty"`
	// Budget is this endpoint's decision timeout when Fail is set. Default limiter.timeout.
	Budget Duration `yaml:"budget,omitempty"`
	// LocalFraction is, for fail: local, the emergency bucket's share of the policy. Default 0.5.
	LocalFraction float64 `yaml:"local_fraction,omitempty"`
}

// Policy is the limit per tenant and endpoint: rate and burst for the token bucket, leases and
// GCRA; limit per window for the window algorithms.
type Policy struct {
	// Rate in tokens (requests) per second, > 0.
	Rate float64 `yaml:"rate,omitempty"`
	// Burst is the bucket capacity in tokens, >= 1.
	Burst int64 `yaml:"burst,omitempty"`
	// Limit is the most requests per Window (fixed-window, sliding-window, sliding-log).
	Limit int64 `yaml:"limit,omitempty"`
	// Window of the window algorithms, >= 1ms.
	Window Duration `yaml:"window,omitempty"`
	// Quota is the long tier of limiter.kind two-tier: at most Limit requests per tenant per
	// Window (a fixed window aligned on the Unix epoch), on top of the rate/burst bucket per
	// tenant endpoint.
	Quota *QuotaCfg `yaml:"quota,omitempty"`
	// File names a tariff file (limiter.ParseTariffs format: plans -> limits per endpoint, tenant
	// -> plan), relative to the scenario file's directory. It replaces rate and burst: each tenant
	// endpoint gets its plan's bucket, and the file is re-read every second while the run goes.
	File string `yaml:"file,omitempty"`
	// Tariffs is the same document written inline instead of File.
	Tariffs *InlineTariffs `yaml:"tariffs,omitempty"`
}

// InlineTariffs is a tariff document written inside a scenario, kept as YAML: limiter.ParseTariffs
// validates it.
type InlineTariffs struct{ node *yaml.Node }

// UnmarshalYAML keeps the document as written.
func (t *InlineTariffs) UnmarshalYAML(n *yaml.Node) error {
	t.node = n
	return nil
}

// MarshalYAML writes the document back.
func (t InlineTariffs) MarshalYAML() (any, error) { return t.node, nil }

// QuotaCfg is a two-tier policy's long quota.
type QuotaCfg struct {
	// Limit in requests per tenant per Window, >= 1.
	Limit int64 `yaml:"limit"`
	// Window of the quota, 1ms..8760h, e.g. 24h for a daily quota.
	Window Duration `yaml:"window"`
}

// LimiterCfg picks the limiter under test.
type LimiterCfg struct {
	// Kind: token-bucket (Lua on Redis Cluster, default), memory (the in-process twin) or noop
	// (allows everything: measures the generator itself).
	Kind LimiterKind `yaml:"kind,omitempty"`
	// Timeout of one decision. Default 50ms.
	Timeout Duration `yaml:"timeout,omitempty"`
	// Breaker stops calling a node after consecutive failures (only with endpoints' fail set).
	Breaker *BreakerCfg `yaml:"breaker,omitempty"`
	// Lease configures kind: lease (local token leases per simulated gateway). Other kinds ignore
	// it, so a lease scenario runs centrally on the same trace with --limiter token-bucket.
	Lease *LeaseCfg `yaml:"lease,omitempty"`
	// Clock is whose time a decision uses: gateway (the request's now, sent to the script; the
	// stored time never moves backwards) or redis (TIME inside the script; token-bucket only).
	// Default gateway.
	Clock string `yaml:"clock,omitempty"`
	// Transport is how kind token-bucket's decisions travel to Redis: plain (one EVALSHA call per
	// decision, as a gateway without batching makes) or coalesce (limiter.CoalescingBucket:
	// concurrent decisions queued per primary and sent as one pipeline of EVALSHAs; same script,
	// keys, arguments, timeouts, NOSCRIPT fallback and fail policies). Default plain.
	Transport string `yaml:"transport,omitempty"`
	// Gateways is how many simulated gateway instances the workers are split across (worker i
	// belongs to gateway i mod Gateways), for faults that hit some gateways only (clock-skew).
	// Default 1; kind lease takes lease.gateways instead.
	Gateways int `yaml:"gateways,omitempty"`
}

// LeaseCfg is the local-lease layer: each of Gateways simulated gateway instances takes up to Size
// tokens at once from the central bucket and spends them in memory; unused tokens expire after TTL.
type LeaseCfg struct {
	// Size of one lease in tokens, 1..policy.burst. Default 100 (capped at the burst).
	Size int64 `yaml:"size,omitempty"`
	// Gateways is the number of simulated gateway instances sharing the cluster. Default 8.
	Gateways int `yaml:"gateways,omitempty"`
	// TTL of a lease. Default 1s.
	TTL Duration `yaml:"ttl,omitempty"`
	// Refresh is refresh-ahead (limiter.WithLeaseRefresh): a spend that leaves at most
	// refresh*size tokens, or comes within refresh*ttl of the lease's expiry, tops the lease up to
	// size in the background, so the key's next requests do not wait for Redis. 0 turns it off;
	// otherwise a fraction below 1. Default 0.25.
	Refresh *float64 `yaml:"refresh,omitempty"`
}

// BreakerCfg is a per-node circuit breaker: after Threshold consecutive failures the node is not
// called for Cooldown; then one probe decides whether it closes again.
type BreakerCfg struct {
	// Threshold of consecutive failures, default 5.
	Threshold int `yaml:"threshold,omitempty"`
	// Cooldown before a probe, default 1s.
	Cooldown Duration `yaml:"cooldown,omitempty"`
}

// ClusterCfg is the Redis Cluster the limiter runs on.
type ClusterCfg struct {
	// Provider: local (redis-server child processes, default), running (the cluster started by
	// `ratelab cluster up`), docker (containers started through the Docker API) or external (a
	// cluster someone else runs, at URL).
	Provider ClusterProvider `yaml:"provider,omitempty"`
	// URL locates an external cluster: redis://[user@]host:port[,host:port...] or rediss:// for
	// TLS. Required with provider external, refused otherwise. It never holds a password.
	URL string `yaml:"url,omitempty"`
	// Image is the Redis image of provider docker; empty means the docker package's default.
	Image string `yaml:"image,omitempty"`
	// Primaries, default 3 (0 or absent means the default).
	Primaries int `yaml:"primaries,omitempty"`
	// Replicas per primary, default 1 (0 is allowed: no failover possible).
	Replicas *int `yaml:"replicas,omitempty"`
	// NodeTimeout is cluster-node-timeout. Default 1s.
	NodeTimeout Duration `yaml:"node_timeout,omitempty"`
}

// Parse decodes a scenario strictly (unknown fields are errors), applies defaults and validates it.
// name is used in error messages (a file name or "builtin:hot-tenant").
func Parse(name string, data []byte) (*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, withLines(name, data, err)
	}
	return &s, nil
}

// FieldError is one invalid value: the field's path (e.g. "endpoints[1].weight"), the value and
// the fix.
type FieldError struct {
	Field, Value, Fix string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Value + ": " + e.Fix }

// withLines prefixes each field error with "name:line: " where the field is written in data (or
// just "name: " for a default that was not written).
func withLines(name string, data []byte, err error) error {
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	var out []error
	for _, e := range unjoin(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			if line := lineOf(&root, fe.Field); line > 0 {
				out = append(out, fmt.Errorf("%s:%d: %w", name, line, e))
				continue
			}
		}
		out = append(out, fmt.Errorf("%s: %w", name, e))
	}
	return errors.Join(out...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// lineOf finds the line of a field path such as "load.rate" or "faults[2].at" in a YAML document,
// or of its nearest written parent; 0 when nothing of it is written.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			name = part[:i]
			idx, _ = strconv.Atoi(part[i+1 : len(part)-1])
		}
		next := (*yaml.Node)(nil)
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == name {
					next, line = n.Content[i+1], n.Content[i].Line
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n, line = n.Content[idx], n.Content[idx].Line
		}
	}
	return line
}

// LoadFile reads and parses a scenario file.
func LoadFile(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := s.resolveFiles(path, data); err != nil {
		return nil, err
	}
	if err := s.resolveTrace(path); err != nil {
		return nil, err
	}
	return s, nil
}

// ApplyDefaults fills every field left empty with its documented default.
func (s *Spec) ApplyDefaults() {
	if s.Duration == 0 {
		s.Duration = Duration(DefaultDuration)
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	if s.Load.Pacer == "" {
		s.Load.Pacer = "constant"
	}
	if s.Load.MaxInflight == 0 {
		s.Load.MaxInflight = DefaultMaxInflight
	}
	if s.Load.Concurrency == 0 {
		s.Load.Concurrency = DefaultConcurrency
	}
	if s.Tenants.Distribution == "" {
		s.Tenants.Distribution = "zipf"
	}
	if s.Tenants.Distribution == "zipf" && s.Tenants.Theta == 0 {
		s.Tenants.Theta = 0.99
	}
	if len(s.Endpoints) == 0 {
		s.Endpoints = []Endpoint{{Name: "default", Weight: 1}}
	}
	if s.Limiter.Kind == "" {
		s.Limiter.Kind = "token-bucket"
	}
	if s.Limiter.Timeout == 0 {
		s.Limiter.Timeout = Duration(DefaultTimeout)
	}
	if s.Limiter.Transport == "" {
		s.Limiter.Transport = TransportPlain
	}
	if s.Limiter.Clock == "" {
		s.Limiter.Clock = ClockGateway
	}
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		if e.Fail != "" && e.Budget == 0 {
			e.Budget = s.Limiter.Timeout
		}
		if e.Fail == "local" && e.LocalFraction == 0 {
			e.LocalFraction = 0.5
		}
	}
	if s.Limiter.Kind == "lease" && s.Limiter.Lease == nil {
		s.Limiter.Lease = &LeaseCfg{}
	}
	if l := s.Limiter.Lease; l != nil {
		if l.Size == 0 {
			l.Size = min(100, max(s.BucketPolicy().Burst, 1))
		}
		if l.Gateways == 0 {
			l.Gateways = 8
		}
		if l.TTL == 0 {
			l.TTL = Duration(time.Second)
		}
		if l.Refresh == nil {
			r := DefaultLeaseRefresh
			l.Refresh = &r
		}
	}
	if b := s.Limiter.Breaker; b != nil {
		if b.Threshold == 0 {
			b.Threshold = 5
		}
		if b.Cooldown == 0 {
			b.Cooldown = Duration(time.Second)
		}
	}
	if s.Cluster.Provider == "" {
		s.Cluster.Provider = "local"
	}
	if s.Cluster.Primaries == 0 {
		s.Cluster.Primaries = DefaultPrimaries
	}
	if s.Cluster.Replicas == nil {
		r := DefaultReplicas
		s.Cluster.Replicas = &r
	}
	if s.Cluster.NodeTimeout == 0 {
		s.Cluster.NodeTimeout = Duration(DefaultNodeTimeout)
	}
	if s.Via == "" {
		s.Via = ViaProcess
	}
	if s.Trace != nil && s.Trace.Speed == 0 {
		s.Trace.Speed = 1
	}
}

// HasFailPolicy reports whether any endpoint decides by a fail policy when the store fails.
func (s *Spec) HasFailPolicy() bool {
	for _, e := range s.Endpoints {
		if e.Fail != "" {
			return true
		}
	}
	return false
}

// NeedsCluster reports whether the limiter under test talks to Redis.
func (s *Spec) NeedsCluster() bool {
	switch s.Limiter.Kind {
	case "memory", "noop":
		return false
	}
	return true
}

// WindowKind reports whether the limiter counts requests per window (limit/window policy).
func (s *Spec) WindowKind() bool {
	switch s.Limiter.Kind {
	case "fixed-window", "sliding-window", "sliding-log":
		return true
	}
	return false
}

// Validate reports every problem at once, each with its field path, the value and the fix.
func (s *Spec) Validate() error {
	var errs []error
	bad := func(field string, value any, fix string) {
		errs = append(errs, &FieldError{Field: field, Value: fmt.Sprint(value), Fix: fix})
	}
	finitePos := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	if strings.TrimSpace(s.Name) == "" {
		bad("name", `""`, "give the scenario a name")
	}
	if s.Duration < 0 || (s.Duration > 0 && time.Duration(s.Duration) < time.Second) {
		bad("duration", time.Duration(s.Duration), "must be at least 1s")
	}
	if s.Trace != nil {
		// The trace sets the rate and the tenants (see replay.go).
	} else if !finitePos(s.Load.Rate) {
		bad("load.rate", s.Load.Rate, "must be > 0 requests per second")
	} else if s.Load.Rate > 10_000_000 {
		bad("load.rate", s.Load.Rate, "at most 10,000,000 requests per second per generator; use more generators")
	}
	switch s.Load.Pacer {
	case "constant", "poisson":
	default:
		bad("load.pacer", fmt.Sprintf("%q", s.Load.Pacer), "use constant or poisson")
	}
	if s.Load.MaxInflight < 1 || s.Load.MaxInflight > 1_000_000 {
		bad("load.max_inflight", s.Load.MaxInflight, "must be between 1 and 1,000,000")
	}
	if s.Load.Concurrency < 1 || s.Load.Concurrency > 100_000 {
		bad("load.concurrency", s.Load.Concurrency, "must be between 1 and 100,000")
	} else if s.Load.Concurrency > s.Load.MaxInflight && s.Load.MaxInflight >= 1 {
		bad("load.concurrency", s.Load.Concurrency, fmt.Sprintf("must not exceed load.max_inflight (%d)", s.Load.MaxInflight))
	}
	if s.Trace != nil && s.Tenants.Count == 0 {
		// The trace names its tenants.
	} else if s.Tenants.Count < 1 || s.Tenants.Count > 100_000_000 {
		bad("tenants.count", s.Tenants.Count, "must be between 1 and 100,000,000")
	}
	switch s.Tenants.Distribution {
	case "zipf":
		if !finitePos(s.Tenants.Theta) || s.Tenants.Theta > 10 {
			bad("tenants.theta", s.Tenants.Theta, "must be > 0 and <= 10 (0.99 is the classic skew)")
		}
	case "uniform":
	case "hotspot":
		if !(s.Tenants.HotShare > 0 && s.Tenants.HotShare <= 1) {
			bad("tenants.hot_share", s.Tenants.HotShare, "must be in (0, 1]")
		}
		if s.Tenants.HotKeys < 1 || s.Tenants.HotKeys > s.Tenants.Count {
			bad("tenants.hot_keys", s.Tenants.HotKeys, fmt.Sprintf("must be between 1 and tenants.count (%d)", s.Tenants.Count))
		}
	default:
		bad("tenants.distribution", fmt.Sprintf("%q", s.Tenants.Distribution), "use zipf, uniform or hotspot")
	}
	seen := map[string]bool{}
	for i, e := range s.Endpoints {
		f := fmt.Sprintf("endpoints[%d]", i)
		if e.Name == "" || strings.ContainsAny(e.Name, "{} \t\n") {
			bad(f+".name", fmt.Sprintf("%q", e.Name), "must be non-empty without spaces or braces (it becomes part of a Redis key)")
		} else if seen[e.Name] {
			bad(f+".name", fmt.Sprintf("%q", e.Name), "is listed twice; endpoint names must be unique")
		}
		seen[e.Name] = true
		if !finitePos(e.Weight) {
			bad(f+".weight", e.Weight, "must be > 0")
		}
		switch e.Fail {
		case "", "open", "closed", "local":
		default:
			bad(f+".fail", fmt.Sprintf("%q", e.Fail), "use open, closed or local (or leave it out: failures are errors)")
		}
		if b := time.Duration(e.Budget); e.Budget != 0 && (b < 100*time.Microsecond || b > 10*time.Second) {
			bad(f+".budget", b, "must be between 100µs and 10s")
		}
		if e.Fail == "local" && !(e.LocalFraction > 0 && e.LocalFraction <= 1) {
			bad(f+".local_fraction", e.LocalFraction, "must be in (0, 1]")
		}
	}
	if b := s.Limiter.Breaker; b != nil {
		if b.Threshold < 1 || b.Threshold > 1000 {
			bad("limiter.breaker.threshold", b.Threshold, "must be between 1 and 1000")
		}
		if c := time.Duration(b.Cooldown); c < time.Millisecond || c > time.Minute {
			bad("limiter.breaker.cooldown", c, "must be between 1ms and 1m")
		}
		if !s.HasFailPolicy() {
			bad("limiter.breaker", "set", "a breaker decides by the endpoints' fail policy: set fail on at least one endpoint")
		}
	}
	if s.HasTariffs() {
		s.validateTariffs(bad)
	} else if s.WindowKind() {
		if s.Policy.Limit < 1 {
			bad("policy.limit", s.Policy.Limit, fmt.Sprintf("limiter.kind %s needs the most requests per window, >= 1", s.Limiter.Kind))
		}
		if w := time.Duration(s.Policy.Window); w < time.Millisecond || w > 24*time.Hour {
			bad("policy.window", w, "must be between 1ms and 24h, e.g. window: 1s")
		}
		if s.Policy.Rate != 0 || s.Policy.Burst != 0 {
			bad("policy", "rate/burst", fmt.Sprintf("limiter.kind %s takes limit and window, not rate and burst", s.Limiter.Kind))
		}
		if s.HasFailPolicy() {
			bad("limiter.kind", s.Limiter.Kind, "fail policies wrap the token bucket only for now; drop endpoints' fail")
		}
	} else {
		byWindow := s.Policy.Limit != 0 || s.Policy.Window != 0
		switch {
		case byWindow && (s.Policy.Rate != 0 || s.Policy.Burst != 0):
			bad("policy", "limit/window", fmt.Sprintf("limiter.kind %s takes rate and burst, or limit and window (read as rate limit/window, burst limit), not both", s.Limiter.Kind))
		case byWindow:
			// The same limit as a bucket, so one scenario runs through every algorithm.
			if s.Policy.Limit < 1 {
				bad("policy.limit", s.Policy.Limit, "must be >= 1 (with window, it reads as burst limit, rate limit/window)")
			}
			if w := time.Duration(s.Policy.Window); w < time.Millisecond || w > 24*time.Hour {
				bad("policy.window", w, "must be between 1ms and 24h, e.g. window: 1s")
			}
		default:
			if !finitePos(s.Policy.Rate) {
				bad("policy.rate", s.Policy.Rate, "must be > 0 tokens per second")
			}
			if s.Policy.Burst < 1 {
				bad("policy.burst", s.Policy.Burst, "must be >= 1 token")
			}
		}
	}
	switch s.Limiter.Kind {
	case "token-bucket", "gcra", "fixed-window", "sliding-window", "sliding-log", "two-tier", "lease", "memory", "noop":
	default:
		bad("limiter.kind", fmt.Sprintf("%q", s.Limiter.Kind), "use token-bucket, gcra, fixed-window, sliding-window, sliding-log, two-tier, lease, memory or noop")
	}
	s.validateFamily(bad)
	if l := s.Limiter.Lease; l != nil {
		// Other kinds ignore it, so --limiter can switch a lease scenario to central on the same
		// trace; it must still be valid.
		if b := s.BucketPolicy().Burst; l.Size < 1 || (b >= 1 && l.Size > b) {
			bad("limiter.lease.size", l.Size, fmt.Sprintf("must be between 1 and policy.burst (%d)", b))
		}
		if l.Gateways < 1 || l.Gateways > 1024 {
			bad("limiter.lease.gateways", l.Gateways, "must be between 1 and 1024")
		}
		if t := time.Duration(l.TTL); t < time.Millisecond || t > time.Hour {
			bad("limiter.lease.ttl", t, "must be between 1ms and 1h")
		}
		if r := l.Refresh; r != nil && !(*r >= 0 && *r < 1) {
			bad("limiter.lease.refresh", *r, "must be 0 (off) or a fraction below 1, e.g. 0.25")
		}
		if s.HasFailPolicy() && s.Limiter.Kind == "lease" {
			bad("limiter.kind", "lease", "fail policies wrap the central token bucket only; drop endpoints' fail or use token-bucket")
		}
	}
	if t := time.Duration(s.Limiter.Timeout); t < time.Millisecond || t > 10*time.Second {
		bad("limiter.timeout", t, "must be between 1ms and 10s")
	}
	switch s.Cluster.Provider {
	case "local", "running", "docker":
		if s.Cluster.URL != "" {
			bad("cluster.url", cluster.RedactURL(s.Cluster.URL), "only provider external takes a URL; set cluster.provider: external or drop cluster.url")
		}
	case "external":
		if s.Cluster.URL == "" {
			bad("cluster.url", `""`, "provider external needs redis://[user@]host:port[,host:port...] (or rediss:// for TLS)")
		} else if _, err := cluster.ParseExternal(s.Cluster.URL); err != nil {
			bad("cluster.url", cluster.RedactURL(s.Cluster.URL), err.Error())
		}
	default:
		bad("cluster.provider", fmt.Sprintf("%q", s.Cluster.Provider), "use local, running, docker or external")
	}
	if s.Cluster.Image != "" && s.Cluster.Provider != "docker" {
		bad("cluster.image", s.Cluster.Image, "only provider docker runs an image; set cluster.provider: docker or drop cluster.image")
	}
	if s.Cluster.Primaries < 1 || s.Cluster.Primaries > 64 {
		bad("cluster.primaries", s.Cluster.Primaries, "must be between 1 and 64")
	}
	if r := s.Cluster.Replicas; r != nil && (*r < 0 || *r > 4) {
		bad("cluster.replicas", *r, "must be between 0 and 4")
	}
	if t := time.Duration(s.Cluster.NodeTimeout); t < 100*time.Millisecond || t > time.Minute {
		bad("cluster.node_timeout", t, "must be between 100ms and 1m")
	}
	s.validateFaults(bad)
	s.validateSLO(bad)
	s.validateVia(bad)
	return errors.Join(errs...)
}

// YAML returns the resolved spec (defaults applied) as YAML.
func (s *Spec) YAML() []byte {
	out, err := yaml.Marshal(s)
	if err != nil {
		// A Spec holds only plain fields; Marshal cannot fail on it.
		panic(err)
	}
	return out
}
