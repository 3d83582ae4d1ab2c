package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/scenarios"
)

// A multi-region run (spec.Regions). Every request gets a region, drawn from the seed, the
// request's intended start and its tenant (pick), and is decided by one of that region's
// gateways. The first region is home: it uses the session's cluster. What the other regions'
// gateways decide with depends on the design:
//
//   - global: the home cluster with the full policy, through a forwarder per node that holds
//     each direction rtt/2 ± jitter (regionLinks);
//   - split: a cluster of their own (started like the home one), each tenant's policy scaled
//     by the region's share;
//   - rebalance: as split, with each tenant's shares moved toward the demand the regions
//     observed, every period, by a rebalancer in the home region (rebalance.go);
//   - independent: as split with every share 1, the naive baseline that overspends.
//
// One checker judges every region's decisions against the global envelope (spec.policy per
// tenant), so overspend is the regions' joint excess over one exact bucket.

// regionRun is the session's regions.
type regionRun struct {
	design  string
	names   []string
	shares  []float64 // traffic shares, normalised
	cum     []float64 // their cumulative sums, for pick
	affin   float64
	seed    uint64
	perGw   int // gateways per region
	rtt     time.Duration
	jitter  time.Duration
	budget  time.Duration
	regions []*region
	// quota holds each tenant's share of its quota per region (not in design global).
	quota *quotaShares
	reb   *rebalancer // design rebalance only
	// tenantOf maps a tenant's name to its index (the policy funcs get names).
	tenantOf map[string]int
}

// region is one region's gateways and what they reach.
type region struct {
	name string
	st   *store // the store its gateways decide on: its own cluster, or (global) the home one
	// links are its forwarders to another region's cluster (global, remote regions); nil
	// otherwise.
	links *regionLinks
	cut   atomic.Bool
	stats regionStats
	// demand counts the requests each tenant sent to this region since the last report.
	demand []atomic.Int64
}

// newRegionRun lays out spec's regions over tenants.
func newRegionRun(spec *scenarios.Spec, tenants []string) *regionRun {
	cfg := spec.Regions
	rr := &regionRun{
		design: cfg.Design, shares: cfg.Shares(), affin: cfg.Affinity, seed: spec.Seed,
		perGw: spec.GatewayCount(), rtt: time.Duration(cfg.RTT), jitter: time.Duration(cfg.Jitter),
		budget: time.Duration(cfg.Budget), tenantOf: make(map[string]int, len(tenants)),
	}
	var c float64
	for i, g := range cfg.List {
		rr.names = append(rr.names, g.Name)
		c += rr.shares[i]
		rr.cum = append(rr.cum, c)
		rg := &region{name: g.Name}
		rg.stats.init()
		if cfg.Design == scenarios.DesignRebalance {
			rg.demand = make([]atomic.Int64, len(tenants))
		}
		rr.regions = append(rr.regions, rg)
	}
	for i, t := range tenants {
		rr.tenantOf[t] = i
	}
	switch cfg.Design {
	case scenarios.DesignSplit, scenarios.DesignRebalance:
		rr.quota = newQuotaShares(len(tenants), rr.shares)
	case scenarios.DesignIndependent:
		ones := make([]float64, len(rr.shares))
		for i := range ones {
			ones[i] = 1
		}
		rr.quota = newQuotaShares(len(tenants), ones)
	}
	return rr
}

// pick is the region of the request intended at off for tenant: a pure function of the seed,
// off and the tenant, so the same seed gives every request the same region in every design
// (and the dispatcher and the worker agree without passing it along). With probability affin
// the tenant's home region (tenant mod regions), otherwise a region drawn by the shares.
func (rr *regionRun) pick(off time.Duration, tenant uint32) int {
	h := mix64(rr.seed ^ mix64(uint64(off)^uint64(tenant)<<40^0x7265_6769_6f6e))
	if rr.affin > 0 && unit(h) < rr.affin {
		return int(tenant) % len(rr.regions)
	}
	u := unit(mix64(h))
	for i, c := range rr.cum {
		if u < c {
			return i
		}
	}
	return len(rr.cum) - 1
}

// mix64 is SplitMix64's finaliser: a bijection that spreads every input bit over the output.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// unit maps h to [0, 1) with 53 bits.
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// gateway is the index in Session.gateways of the gateway of region reg that worker serves.
func (rr *regionRun) gateway(reg, worker int) int { return reg*rr.perGw + worker%rr.perGw }

// offer counts a request offered to its region (sent or dropped).
func (rr *regionRun) offer(j job) {
	rr.regions[rr.pick(j.off, j.tenant)].stats.offered.Add(1)
}

// arrive counts a request reaching its region's gateway: the demand a rebalance report carries.
func (rr *regionRun) arrive(reg int, tenant uint32) {
	if d := rr.regions[reg].demand; d != nil {
		d[tenant].Add(1)
	}
}

// buildRegions builds every region's gateways (Session.gateways holds region r's at
// [r*perGw, (r+1)*perGw)), starting the clusters and forwarders the design needs.
func (s *Session) buildRegions(ctx context.Context) error {
	if s.opts.Part.Split() {
		return fmt.Errorf("--part %s: a multi-region run is one generator (its regions share one checker); drop --part", s.opts.Part)
	}
	rr := newRegionRun(s.Spec, s.Tenants)
	s.regions = rr
	s.env.Mode = "central, regions " + rr.design
	locals, err := s.startRegionClusters(ctx)
	if err != nil {
		return err
	}
	for i, rg := range rr.regions {
		st, err := s.regionStore(ctx, i, rg, locals[i])
		if err != nil {
			return fmt.Errorf("region %s: %w", rg.name, err)
		}
		rg.st = st
		lim, err := s.regionBucket(ctx, i, st)
		if err != nil {
			return fmt.Errorf("region %s: %w", rg.name, err)
		}
		if rg.links != nil {
			lim = crossing{lim}
		}
		for range rr.perGw {
			if s.opts.Wrap != nil {
				s.gateways = append(s.gateways, s.opts.Wrap(lim))
			} else {
				s.gateways = append(s.gateways, lim)
			}
		}
	}
	if rr.design == scenarios.DesignRebalance {
		rr.reb = newRebalancer(rr, time.Duration(s.Spec.Regions.Period))
		s.onClose(func() error { rr.reb.stop(); return nil })
	}
	return nil
}

// startRegionClusters starts, at once, a local cluster for every region but home (none in
// design global), with the home cluster's topology; they are stopped with the run. The result
// is indexed by region (nil for home).
func (s *Session) startRegionClusters(ctx context.Context) ([]*cluster.Local, error) {
	rr, spec := s.regions, s.Spec
	out := make([]*cluster.Local, len(rr.regions))
	if rr.design == scenarios.DesignGlobal {
		return out, nil
	}
	errs := make([]error, len(rr.regions))
	var wg sync.WaitGroup
	for i := 1; i < len(rr.regions); i++ {
		s.logf("region %s: starting a local Redis Cluster: %d primaries x %d replicas", rr.names[i], spec.Cluster.Primaries, *spec.Cluster.Replicas)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = cluster.StartLocal(ctx, cluster.Options{Primaries: spec.Cluster.Primaries, Replicas: *spec.Cluster.Replicas,
				NodeTimeout: time.Duration(spec.Cluster.NodeTimeout), Logf: s.logf})
			if errs[i] != nil {
				errs[i] = fmt.Errorf("region %s: %w", rr.names[i], errs[i])
			}
		}()
	}
	wg.Wait()
	for _, l := range out {
		if l != nil {
			s.onClose(l.Close)
		}
	}
	return out, errors.Join(errs...)
}

// regionStore is the store region i's gateways decide on: the session's for the home region;
// in design global the home cluster through the region's forwarders; otherwise local, the
// region's own cluster.
func (s *Session) regionStore(ctx context.Context, i int, rg *region, local *cluster.Local) (*store, error) {
	rr, spec := s.regions, s.Spec
	if i == 0 {
		return s.store, nil
	}
	var cl cluster.Cluster
	opts := s.store.cl.ClientOptions()
	if rr.design == scenarios.DesignGlobal {
		cl = s.store.cl
		links, err := newRegionLinks(cl.Nodes(), rr.rtt, rr.jitter)
		if err != nil {
			return nil, err
		}
		s.onClose(links.close)
		rg.links = links
		o := *opts
		o.Dialer = links.dial
		// A new connection pays a round trip per handshake step before its first command
		// (HELLO, then CLIENT SETINFO); the identity step tells the server nothing a run
		// needs, and without it a connection re-dialled after a timeout costs two round
		// trips instead of three.
		o.DisableIdentity = true
		opts = &o
	} else {
		cl, opts = local, local.ClientOptions()
	}
	st := &store{cl: cl, counters: s.store.counters, cleanup: func() error { return nil }, reloadEvery: reloadEvery}
	st.client = s.extraClient(ctx, opts, spec.Load.Concurrency)
	return st, nil
}

// regionBucket builds region i's central token bucket on st with the region's policy (the full
// one in design global, the tenant's share of it otherwise), wrapped in the endpoints' fail
// policies.
func (s *Session) regionBucket(ctx context.Context, i int, st *store) (limiter.Limiter, error) {
	spec, rr := s.Spec, s.regions
	if err := st.preloadScript(ctx); err != nil {
		return nil, err
	}
	policyFor := s.PolicyFunc()
	if rr.quota != nil {
		policyFor = rr.quota.policyFunc(i, s.policy, rr.tenantOf)
	}
	opts := []limiter.Option{limiter.WithPolicyFunc(policyFor), limiter.WithTimeout(time.Duration(spec.Limiter.Timeout))}
	if spec.Limiter.Clock == scenarios.ClockRedis {
		opts = append(opts, limiter.WithRedisClock())
	}
	var rb limiter.Limiter
	if spec.Limiter.Transport == scenarios.TransportCoalesce {
		cb, err := limiter.NewCoalescingBucket(st.client, s.policy, limiter.WithBucketOptions(opts...))
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		s.onClose(func() error { cb.Close(); return nil })
		rb = cb
	} else {
		tb, err := limiter.NewRedisTokenBucket(st.client, s.policy, opts...)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		rb = tb
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.onClose(func() error { cancel(); return nil })
	lim, err := withFailPolicy(bg, spec, rb, st.client, policyFor)
	if err != nil {
		return nil, fmt.Errorf("fail policy: %w", err)
	}
	return lim, nil
}

// crossing is a gateway whose decisions cross to another region: it parks each one in a
// goroutine of its own (limiter.AsyncLimiter), so a worker goes on to its next request while
// the round trip is in flight. Each region's gateways are their own machines: a remote region's
// slow decisions must not hold the workers that serve the home region's requests.
type crossing struct{ limiter.Limiter }

func (c crossing) AllowAsync(ctx context.Context, r limiter.Request, done limiter.Deferred) (limiter.Decision, bool, error) {
	go func() { done.Decided(c.Allow(ctx, r)) }()
	return limiter.Decision{}, true, nil
}

// quotaShares holds, per region and tenant, the tenant's share of its quota in that region
// (float64 bits, read by every decision, written by the rebalancer).
type quotaShares struct {
	tenants int
	v       [][]atomic.Uint64
}

func newQuotaShares(tenants int, initial []float64) *quotaShares {
	q := &quotaShares{tenants: tenants, v: make([][]atomic.Uint64, len(initial))}
	for r, sh := range initial {
		q.v[r] = make([]atomic.Uint64, tenants)
		for t := range q.v[r] {
			q.v[r][t].Store(math.Float64bits(sh))
		}
	}
	return q
}

func (q *quotaShares) get(r, t int) float64 { return math.Float64frombits(q.v[r][t].Load()) }

func (q *quotaShares) set(r, t int, v float64) { q.v[r][t].Store(math.Float64bits(v)) }

// policyFunc is region r's policy of each tenant: p scaled by the tenant's share there, rate
// and burst alike. The burst is rounded down (at least 1 token), so the regions' bursts never
// add up to more than p's.
func (q *quotaShares) policyFunc(r int, p limiter.BucketPolicy, tenantOf map[string]int) limiter.PolicyFunc {
	return func(tenant, _ string) limiter.BucketPolicy {
		t, ok := tenantOf[tenant]
		if !ok {
			return p
		}
		return scaled(p, q.get(r, t))
	}
}

// scaled is p times share (share in (0, 1]).
func scaled(p limiter.BucketPolicy, share float64) limiter.BucketPolicy {
	return limiter.BucketPolicy{Rate: p.Rate * share, Burst: max(1, int64(math.Floor(float64(p.Burst)*share+1e-9)))}
}

// Regions names the run's regions in spec order, or nil without regions.
func (s *Session) Regions() []string {
	if s.regions == nil {
		return nil
	}
	return s.regions.names
}
