package attack

import (
	"context"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"ratelab/limiter"
	"ratelab/workload"
	"ratelab/workload/trace"
)

// traceEpoch is the time of offset 0 for a trace that does not know its start: a fixed instant,
// so that two replays send the same times in TimeHeader.
var traceEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// plan is the materialized schedule of one attack: request i is intended at off[i] and hits
// recs[i]'s tenant and endpoint.
type plan struct {
	hdr     trace.Header
	recs    []trace.Request
	off     []time.Duration // intended offset of schedule slot i (trace time / speed)
	urls    [][]string      // per gateway, per endpoint
	tenants int             // dense tenant ids are < tenants
	epochMs int64           // Unix ms of trace offset 0
	rate    float64         // mean offered rate, for vegeta's Pacer.Rate
	window  time.Duration   // the schedule's window at the replay's speed (trace.Trace.Window)
	// nextSame[i] is the next request of recs[i]'s tenant (-1: none); nil without tenant order.
	nextSame []int32
	first    []int32 // per tenant: its first request (-1: none); nil without tenant order
}

// newPlan builds the schedule: the given trace, or one generated from the options exactly as
// a scenario generates its stream (same pacer, Zipf and seed).
func newPlan(o Options) (*plan, error) {
	t := o.Trace
	if t == nil {
		var err error
		if t, err = generate(o); err != nil {
			return nil, err
		}
	}
	p := &plan{hdr: t.Header, recs: t.Requests, off: make([]time.Duration, len(t.Requests))}
	for i, r := range t.Requests {
		p.off[i] = time.Duration(float64(r.At) / o.Speed)
	}
	if o.Trace == nil {
		p.tenants = o.Tenants
	} else if len(t.Tenants) > 0 {
		p.tenants = len(t.Tenants)
	} else {
		for _, r := range t.Requests {
			p.tenants = max(p.tenants, int(r.Tenant)+1)
		}
	}
	if len(o.Keys) > 0 && p.tenants > len(o.Keys) {
		return nil, fmt.Errorf("%w: keys: %d keys for the trace's %d tenants; give one key per tenant", ErrInvalid, len(o.Keys), p.tenants)
	}
	if p.tenants*len(p.hdr.Endpoints) > MaxKeys {
		return nil, fmt.Errorf("%w: %d tenants x %d endpoints: more than %d keys", ErrInvalid, p.tenants, len(p.hdr.Endpoints), MaxKeys)
	}
	for _, u := range o.urls() {
		base := strings.TrimSuffix(u, "/")
		urls := make([]string, 0, len(p.hdr.Endpoints))
		for _, e := range p.hdr.Endpoints {
			urls = append(urls, base+"/"+strings.TrimPrefix(e, "/"))
		}
		p.urls = append(p.urls, urls)
	}
	start := t.Start
	if start.IsZero() {
		start = traceEpoch
	}
	p.epochMs = start.UnixMilli()
	p.window, p.rate = t.Window(o.Speed)
	if o.Trace != nil && !o.NoTenantOrder {
		p.nextSame = make([]int32, len(p.recs))
		p.first = make([]int32, p.tenants)
		for i := range p.first {
			p.first[i] = -1
		}
		for i := len(p.recs) - 1; i >= 0; i-- {
			tn := p.recs[i].Tenant
			p.nextSame[i] = p.first[tn]
			p.first[tn] = int32(i)
		}
	}
	return p, nil
}

// duration is the schedule's length: the last intended start.
func (p *plan) duration() time.Duration { return p.off[len(p.off)-1] }

// traceMs is request i's trace time in Unix ms (unscaled by the replay speed).
func (p *plan) traceMs(i int) int64 { return p.epochMs + p.recs[i].At.Milliseconds() }

// key is request i's dense overspend key.
func (p *plan) key(i int) int {
	r := p.recs[i]
	return int(r.Tenant)*len(p.hdr.Endpoints) + int(r.Endpoint)
}

// pacer adapts the schedule to vegeta: hit number hits is due at off[hits].
type pacer struct{ p *plan }

var _ vegeta.Pacer = pacer{}

// Pace returns how long to wait for hit number hits; it stops after the last one.
func (pc pacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= uint64(len(pc.p.off)) {
		return 0, true
	}
	return pc.p.off[hits] - elapsed, false
}

// Rate is the schedule's mean rate.
func (pc pacer) Rate(time.Duration) float64 { return pc.p.rate }

// targeter hands out the schedule's requests in call order: method, URL, body, the extra
// headers, the tenant's API key in KeyFormat, the request index (for the RoundTripper) and, when asked, the cost and the trace time.
func (p *plan) targeter(o Options) vegeta.Targeter {
	keyH := textproto.CanonicalMIMEHeaderKey(o.KeyHeader)
	reqH := textproto.CanonicalMIMEHeaderKey(ReqHeader)
	costH := textproto.CanonicalMIMEHeaderKey(o.CostHeader)
	timeH := textproto.CanonicalMIMEHeaderKey(o.TimeHeader)
	extra := make(http.Header, len(o.Header))
	for name, vs := range o.Header {
		extra[textproto.CanonicalMIMEHeaderKey(name)] = vs
	}
	keyValue := o.keyValues()
	var next atomic.Uint64
	return func(t *vegeta.Target) error {
		if t == nil {
			return vegeta.ErrNilTarget
		}
		k := next.Add(1) - 1
		if k >= uint64(len(p.recs)) {
			return vegeta.ErrNoTargets
		}
		r := p.recs[k]
		h := make(http.Header, 4+len(extra))
		for name, vs := range extra {
			h[name] = vs // shared: net/http only reads request header values
		}
		h[keyH] = []string{keyValue(p.hdr.TenantName(r.Tenant), r.Tenant)}
		h[reqH] = []string{strconv.FormatUint(k, 10)}
		if o.CostHeader != "" {
			h[costH] = []string{strconv.FormatUint(uint64(r.Cost), 10)}
		}
		if o.TimeHeader != "" {
			h[timeH] = []string{strconv.FormatInt(p.traceMs(int(k)), 10)}
		}
		*t = vegeta.Target{Method: o.Method, URL: p.urls[k%uint64(len(p.urls))][r.Endpoint], Header: h, Body: o.Body}
		return nil
	}
}

// transport ties vegeta's Seq (set by the attacker) to the targeter's request index, and with
// tenant order holds a request until its tenant's previous one has been answered.
type transport struct {
	base    http.RoundTripper
	p       *plan
	seqPlan []int32 // per Seq: request index + 1 (0: unknown); each slot written once
	order   *sequencer
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	n := uint64(len(t.p.recs))
	s, err1 := strconv.ParseUint(req.Header.Get("X-Vegeta-Seq"), 10, 64)
	k, err2 := strconv.ParseUint(req.Header.Get(ReqHeader), 10, 64)
	if err1 != nil || err2 != nil || s >= n || k >= n {
		return t.base.RoundTrip(req)
	}
	// Written before the response exists; read by the collector after vegeta delivers the
	// Result of this Seq, which happens after this call returns.
	t.seqPlan[s] = int32(k) + 1
	if t.order == nil {
		return t.base.RoundTrip(req)
	}
	tenant := t.p.recs[k].Tenant
	if err := t.order.wait(req.Context(), int32(k), tenant); err != nil {
		return nil, err
	}
	// Response headers come after the target's decision: the next request of the tenant may go.
	defer t.order.done(int32(k), tenant)
	return t.base.RoundTrip(req)
}

// sequencer lets each tenant's requests through one at a time, in schedule order. The earliest
// unanswered request of all is never waiting, so it cannot deadlock; a request whose context
// ends while it waits is skipped when its turn comes.
type sequencer struct {
	mu      sync.Mutex
	p       *plan
	turn    []int32 // per tenant: the request whose turn it is (-1: none left)
	skipped map[int32]bool
	waiting map[int32]chan struct{}
}

func newSequencer(p *plan) *sequencer {
	return &sequencer{p: p, turn: append([]int32(nil), p.first...), skipped: map[int32]bool{}, waiting: map[int32]chan struct{}{}}
}

func (s *sequencer) wait(ctx context.Context, k int32, tenant uint32) error {
	s.mu.Lock()
	if s.turn[tenant] == k {
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiting[k] = ch
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.turn[tenant] == k { // granted just now: go, and pass the turn on when done
			return nil
		}
		delete(s.waiting, k)
		s.skipped[k] = true
		return fmt.Errorf("waiting for the previous request of the tenant: %w", ctx.Err())
	}
}

func (s *sequencer) done(k int32, tenant uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nx := s.p.nextSame[k]
	for nx >= 0 && s.skipped[nx] {
		delete(s.skipped, nx)
		nx = s.p.nextSame[nx]
	}
	s.turn[tenant] = nx
	if ch, ok := s.waiting[nx]; ok {
		delete(s.waiting, nx)
		close(ch)
	}
}

// tenantNames are the plan's tenants' names (their API keys), by index.
func (p *plan) tenantNames() []string {
	out := make([]string, p.tenants)
	for i := range out {
		out[i] = p.hdr.TenantName(uint32(i))
	}
	return out
}

// keyName is key's Redis key: tenant key/endpoints, endpoint key%endpoints.
func (p *plan) keyName(key int) string {
	n := len(p.hdr.Endpoints)
	return limiter.KeyFor(p.hdr.TenantName(uint32(key/n)), p.hdr.Endpoints[key%n])
}

// generate draws the schedule of o as a scenario draws its stream: the same Zipf keys, endpoint
// mix, pacer and seed, and the ramp of o.Stages when set.
func generate(o Options) (*trace.Trace, error) {
	keys, err := workload.NewZipf(uint64(o.Tenants), o.Theta)
	if err != nil {
		return nil, fmt.Errorf("tenants/zipf: %w", err)
	}
	w := o.Weights
	if w == nil {
		w = make([]float64, len(o.Endpoints))
		for i := range w {
			w[i] = 1
		}
	}
	mix, err := workload.NewMix(o.Endpoints, w)
	if err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	gen := trace.GenOptions{
		Rate: o.Rate, Duration: o.Duration, Pacer: o.Pacer, Seed: o.Seed, Keys: keys, Mix: mix,
		Endpoints: o.Endpoints, TenantPrefix: o.TenantPrefix,
	}
	if len(o.Stages) > 0 {
		if gen.Profile, err = workload.NewProfile(o.Rate, o.Stages, o.Duration); err != nil {
			return nil, fmt.Errorf("stages: %w", err)
		}
	}
	return trace.Generate(gen)
}
