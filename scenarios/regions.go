package scenarios

import (
	"fmt"
	"time"
)

// RegionsCfg spreads a run over regions: each region has its gateways and its share of the
// traffic, and every call from one region to another crosses a round trip of RTT ± Jitter.
type RegionsCfg struct {
	// Design is how the regions share each tenant's limit: global, split or rebalance (the
	// Design* constants).
	Design string `yaml:"design"`
	// List names the regions (at least 3) and their traffic shares.
	List []RegionCfg `yaml:"list"`
	// RTT is the round trip between two regions. Default 60ms.
	RTT Duration `yaml:"rtt,omitempty"`
	// Jitter is added to each direction of the round trip, ± uniformly. Default 5ms.
	Jitter Duration `yaml:"jitter,omitempty"`
	// Period is the rebalance design's T: how often the shares follow demand. Default 1s.
	Period Duration `yaml:"period,omitempty"`
	// Budget is the decision budget a region's availability is judged against. Default
	// limiter.timeout.
	Budget Duration `yaml:"budget,omitempty"`
	// Affinity is the share of a tenant's requests that come from its home region (tenant i's
	// home is region i mod len(List)); the rest spread over the regions by their shares. 0 (the
	// default) spreads every tenant's traffic by the shares: each tenant's regional mix is then
	// the global one, the only case where a static split of each tenant's quota is right.
	Affinity float64 `yaml:"affinity,omitempty"`
}

// RegionCfg is one region.
type RegionCfg struct {
	// Name identifies the region in results. Required, unique.
	Name string `yaml:"name"`
	// Share is the region's share of the traffic (normalised over the regions), and in the
	// split design its share of every tenant's quota. With an affinity it is the share of the
	// traffic that does not come from the tenant's home region. Default equal.
	Share float64 `yaml:"share,omitempty"`
}

// Values of RegionsCfg.Design.
const (
	DesignGlobal    = "global"    // one cluster in the first region; the others pay the round trip
	DesignSplit     = "split"     // each region's cluster holds a fixed share of every tenant's quota
	DesignRebalance = "rebalance" // the shares follow each region's observed demand every period
	// DesignIndependent is the naive baseline: every region's cluster holds each tenant's full
	// quota, so the regions together allow up to len(List) times the limit.
	DesignIndependent = "independent"
)

// Defaults of RegionsCfg.
const (
	DefaultRegionRTT    = 60 * time.Millisecond
	DefaultRegionJitter = 5 * time.Millisecond
	DefaultRegionPeriod = time.Second
	// MaxRegionTenants bounds tenants.count of a multi-region run: the rebalance design keeps a
	// share per tenant and region.
	MaxRegionTenants = 1_000_000
)

// Shares are the regions' traffic shares normalised to sum to 1 (equal when none is given).
func (r *RegionsCfg) Shares() []float64 {
	out := make([]float64, len(r.List))
	var sum float64
	for _, g := range r.List {
		sum += g.Share
	}
	for i, g := range r.List {
		if sum > 0 {
			out[i] = g.Share / sum
		} else {
			out[i] = 1 / float64(len(r.List))
		}
	}
	return out
}

// Index returns the position of the region named name in List, or -1.
func (r *RegionsCfg) Index(name string) int {
	for i, g := range r.List {
		if g.Name == name {
			return i
		}
	}
	return -1
}

// OverrideRegions puts a --design and a --period over the regions (each only when set): a
// design other than rebalance drops the period, and rebalance without one gets the default.
func (s *Spec) OverrideRegions(design string, period time.Duration, setDesign, setPeriod bool) error {
	r := s.Regions
	if r == nil {
		return fmt.Errorf("--design/--period: scenario %s has no regions; run regions-global, regions-split or regions-rebalance, or add a regions section", s.Name)
	}
	if setDesign {
		r.Design = design
		switch {
		case design != DesignRebalance:
			r.Period = 0
		case r.Period == 0:
			r.Period = Duration(DefaultRegionPeriod)
		}
	}
	if setPeriod {
		r.Period = Duration(period)
	}
	return nil
}

// defaultRegions fills the regions' defaults; it runs after defaultLimiter (the budget defaults
// to limiter.timeout).
func (s *Spec) defaultRegions() {
	r := s.Regions
	if r == nil {
		return
	}
	if r.RTT == 0 {
		r.RTT = Duration(DefaultRegionRTT)
	}
	if r.Jitter == 0 {
		r.Jitter = Duration(DefaultRegionJitter)
	}
	if r.Design == DesignRebalance && r.Period == 0 {
		r.Period = Duration(DefaultRegionPeriod)
	}
	if r.Budget == 0 {
		r.Budget = s.Limiter.Timeout
	}
}
