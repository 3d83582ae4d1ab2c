package scenarios

import "time"

// Defaults for fields a scenario may leave out.
const (
	DefaultDuration    = 30 * time.Second
	DefaultSeed        = 1
	DefaultMaxInflight = 8192
	DefaultConcurrency = 256
	// DefaultTheta is tenants.theta of a Zipf distribution: the classic skew.
	DefaultTheta = 0.99
	// DefaultLocalFraction is endpoints[].local_fraction of fail: local.
	DefaultLocalFraction = 0.5
	DefaultTimeout       = 50 * time.Millisecond
	// DefaultLeaseSize is limiter.lease.size, capped at the policy's burst.
	DefaultLeaseSize     = 100
	DefaultLeaseGateways = 8
	DefaultLeaseTTL      = time.Second
	// DefaultLeaseRefresh is limiter.lease.refresh: refresh-ahead when a lease is down to a
	// quarter of its tokens or of its TTL.
	DefaultLeaseRefresh     = 0.25
	DefaultBreakerThreshold = 5
	DefaultBreakerCooldown  = time.Second
	DefaultPrimaries        = 3
	DefaultReplicas         = 1
	DefaultNodeTimeout      = time.Second
)

// ApplyDefaults fills every field left empty with its documented default.
func (s *Spec) ApplyDefaults() {
	if s.Duration == 0 {
		s.Duration = Duration(DefaultDuration)
		if len(s.Load.Stages) > 0 {
			s.Duration = Duration(StagesDuration(s.Load.Stages))
		}
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	s.defaultLoad()
	s.defaultTenants()
	s.defaultLimiter()
	s.defaultEndpoints()
	s.defaultCluster()
	s.defaultDurability()
	s.defaultRegions()
	if s.Via == "" {
		s.Via = ViaProcess
	}
	if s.Trace != nil && s.Trace.Speed == 0 {
		s.Trace.Speed = 1
	}
}

func (s *Spec) defaultLoad() {
	if s.Load.Pacer == "" {
		s.Load.Pacer = PacerConstant
	}
	if s.Load.MaxInflight == 0 {
		s.Load.MaxInflight = DefaultMaxInflight
	}
	if s.Load.Concurrency == 0 {
		s.Load.Concurrency = DefaultConcurrency
	}
}

func (s *Spec) defaultTenants() {
	if s.Tenants.Distribution == "" {
		s.Tenants.Distribution = DistZipf
	}
	if s.Tenants.Distribution == DistZipf && s.Tenants.Theta == 0 {
		s.Tenants.Theta = DefaultTheta
	}
}

// defaultEndpoints runs after defaultLimiter: a fail policy's budget defaults to limiter.timeout.
func (s *Spec) defaultEndpoints() {
	if len(s.Endpoints) == 0 {
		s.Endpoints = []Endpoint{{Name: "default", Weight: 1}}
	}
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		if e.Fail != "" && e.Budget == 0 {
			e.Budget = s.Limiter.Timeout
		}
		if e.Fail == FailLocal && e.LocalFraction == 0 {
			e.LocalFraction = DefaultLocalFraction
		}
	}
}

func (s *Spec) defaultLimiter() {
	l := &s.Limiter
	if l.Kind == "" {
		l.Kind = KindTokenBucket
	}
	if l.Timeout == 0 {
		l.Timeout = Duration(DefaultTimeout)
	}
	if l.Transport == "" {
		l.Transport = TransportPlain
	}
	if l.Clock == "" {
		l.Clock = ClockGateway
		if l.Kind == KindRedisRate {
			l.Clock = ClockRedis // redis_rate reads Redis's TIME, whatever the gateway's clock says
		}
	}
	s.defaultGubernator()
	if l.Kind == KindLease && l.Lease == nil {
		l.Lease = &LeaseCfg{}
	}
	if le := l.Lease; le != nil {
		if le.Size == 0 {
			le.Size = min(DefaultLeaseSize, max(s.BucketPolicy().Burst, 1))
		}
		if le.Gateways == 0 {
			le.Gateways = DefaultLeaseGateways
		}
		if le.TTL == 0 {
			le.TTL = Duration(DefaultLeaseTTL)
		}
		if le.Refresh == nil {
			r := DefaultLeaseRefresh
			le.Refresh = &r
		}
	}
	if b := l.Breaker; b != nil {
		if b.Threshold == 0 {
			b.Threshold = DefaultBreakerThreshold
		}
		if b.Cooldown == 0 {
			b.Cooldown = Duration(DefaultBreakerCooldown)
		}
	}
}

func (s *Spec) defaultCluster() {
	c := &s.Cluster
	if c.Provider == "" {
		c.Provider = ProviderLocal
	}
	if c.Primaries == 0 {
		c.Primaries = DefaultPrimaries
	}
	if c.Replicas == nil {
		r := DefaultReplicas
		c.Replicas = &r
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = Duration(DefaultNodeTimeout)
	}
}
