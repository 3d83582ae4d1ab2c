package trace

import (
	"fmt"
	"math"
	"time"

	"ratelab/workload"
)

// DefaultTenantPrefix names generated tenants as the scenario engine does: tenant-0 is the
// hottest rank.
const DefaultTenantPrefix = "tenant-"

// DefaultMaxRequests bounds a generated trace (about 24 bytes per request in memory).
const DefaultMaxRequests = 20_000_000

// GenOptions describe a synthetic trace: the scenario engine's open-loop schedule and request
// stream, so the same seed, rate, duration, key distribution and mix give the same requests
// as `ratelab run`.
type GenOptions struct {
	// Rate is the offered rate in requests per second; Duration the schedule's length.
	Rate     float64
	Duration time.Duration
	// Pacer is "constant" (default) or "poisson".
	Pacer string
	// Profile, when set, replaces Rate: the offered rate follows it (load stages; see
	// workload.Profile), with the pacer's spacing, over the profile's duration (Duration is
	// ignored).
	Profile *workload.Profile
	// Seed seeds the stream (and the Poisson pacer), as a scenario's seed does.
	Seed uint64
	// Keys draws each request's tenant rank; required, at most 2^32 ranks.
	Keys workload.KeyDist
	// Mix draws each request's endpoint; nil means one endpoint, Endpoints[0].
	Mix *workload.Mix
	// Endpoints names the endpoints (Mix's names when nil and Mix is set; "api" when both are).
	Endpoints []string
	// TenantPrefix names tenants (default DefaultTenantPrefix).
	TenantPrefix string
	// Start is the trace's start time (optional).
	Start time.Time
	// MaxRequests refuses a schedule longer than this (default DefaultMaxRequests).
	MaxRequests int
}

// Generate builds the trace GenOptions describe. Offsets are truncated to whole microseconds,
// the file's resolution, so the trace survives Write and ReadAll exactly.
func Generate(o GenOptions) (*Trace, error) {
	if o.Keys == nil {
		return nil, fmt.Errorf("%w: generate: no key distribution; pass workload.NewZipf(tenants, theta)", ErrInvalid)
	}
	if o.Keys.N() > math.MaxUint32+1 {
		return nil, fmt.Errorf("%w: generate: %d tenants, at most 2^32", ErrInvalid, o.Keys.N())
	}
	if o.TenantPrefix == "" {
		o.TenantPrefix = DefaultTenantPrefix
	}
	if len(o.Endpoints) == 0 {
		if o.Mix != nil {
			o.Endpoints = o.Mix.Names()
		} else {
			o.Endpoints = []string{"api"}
		}
	}
	if o.Mix != nil && o.Mix.Len() != len(o.Endpoints) {
		return nil, fmt.Errorf("%w: generate: %d endpoint names for a mix of %d", ErrInvalid, len(o.Endpoints), o.Mix.Len())
	}
	max := o.MaxRequests
	if max <= 0 {
		max = DefaultMaxRequests
	}
	want := o.Rate * o.Duration.Seconds()
	if o.Profile != nil {
		want = o.Profile.Total()
	}
	if want > float64(max) {
		return nil, fmt.Errorf("%w: generate: the schedule holds %.0f requests, more than %d; shorten the run or lower the rate",
			ErrInvalid, want, max)
	}
	var (
		p   workload.Pacer
		err error
	)
	switch o.Pacer {
	case "", "constant":
		if o.Profile != nil {
			p = workload.NewRamp(o.Profile)
			break
		}
		p, err = workload.NewConstant(o.Rate, o.Duration)
	case "poisson":
		if o.Profile != nil {
			p = workload.NewRampPoisson(o.Profile, o.Seed)
			break
		}
		p, err = workload.NewPoisson(o.Rate, o.Duration, o.Seed)
	default:
		return nil, fmt.Errorf("%w: generate: pacer %q: want constant or poisson", ErrInvalid, o.Pacer)
	}
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	t := &Trace{Header: Header{Start: o.Start, TenantPrefix: o.TenantPrefix, Endpoints: o.Endpoints}, Span: o.Duration}
	if o.Profile != nil {
		t.Span = o.Profile.Duration()
	}
	if err := t.Header.Validate(); err != nil {
		return nil, err
	}
	// Same stream as the engine's: NewStream(seed, keys, mix), one draw per scheduled request.
	s := workload.NewStream(o.Seed, o.Keys, o.Mix)
	t.Requests = make([]Request, 0, int(math.Min(want+1, float64(max))))
	for {
		off, ok := p.Next()
		if !ok {
			break
		}
		if len(t.Requests) == max {
			return nil, fmt.Errorf("%w: generate: more than %d requests; shorten the run or lower the rate", ErrInvalid, max)
		}
		tenant, ep := s.Next()
		t.Requests = append(t.Requests, Request{
			At: off.Truncate(time.Microsecond), Tenant: uint32(tenant), Endpoint: uint16(ep), Cost: 1,
		})
	}
	return t, nil
}
