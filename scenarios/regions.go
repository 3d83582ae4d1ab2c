package scenarios

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
}

// RegionCfg is one region.
type RegionCfg struct {
	// Name identifies the region in results. Required, unique.
	Name string `yaml:"name"`
	// Share is the region's share of the traffic (normalised over the regions). Default equal.
	Share float64 `yaml:"share,omitempty"`
}

// Values of RegionsCfg.Design.
const (
	DesignGlobal    = "global"    // one cluster in the first region; the others pay the round trip
	DesignSplit     = "split"     // each region's cluster holds a fixed share of every tenant's quota
	DesignRebalance = "rebalance" // the shares follow each region's observed demand every period
)
