package results

// Regions is a multi-region run's account, one entry per region; absent in a one-region run.
// Overspend and false denies are judged against the global envelope: one exact bucket per
// tenant over every region's allowed requests.
type Regions struct {
	// Design is how the regions share a tenant's limit: global (one cluster in the home
	// region; the others pay the round trip), split (each region's cluster holds a fixed share
	// of every tenant's quota) or rebalance (the shares move with observed demand every PeriodS).
	Design string `json:"design"`
	// Home is the region holding the global design's cluster and the rebalancer.
	Home string `json:"home,omitempty"`
	// PeriodS is the rebalance design's period T in seconds; 0 for the other designs.
	PeriodS float64 `json:"period_s,omitempty"`
	// RTTMs is the configured round trip between two regions (each direction holds half).
	RTTMs float64 `json:"rtt_ms"`
	// JitterMs is the configured jitter on each direction of that round trip.
	JitterMs float64 `json:"jitter_ms,omitempty"`
	// BudgetMs is the decision budget availability is judged against.
	BudgetMs float64 `json:"budget_ms"`
	// CrossRegionCallsPerS is every region's calls to another region per second of the run:
	// decisions that crossed (global), demand reports and share updates (rebalance).
	CrossRegionCallsPerS float64 `json:"cross_region_calls_per_s"`
	// List holds the regions in the spec's order.
	List []Region `json:"list"`
}

// Region is one region's share of a multi-region run.
type Region struct {
	// Name is the region's name in the spec.
	Name string `json:"name"`
	// Offered counts the requests that arrived at this region's gateways (dropped included).
	Offered int64 `json:"offered"`
	// Allowed, Denied, FailedOpen, FailedClosed and Errors split the region's requests by
	// outcome, as the summary's outcomes split the run's (Errors: no decision).
	Allowed      int64 `json:"allowed"`
	Denied       int64 `json:"denied"`
	FailedOpen   int64 `json:"failed_open"`
	FailedClosed int64 `json:"failed_closed"`
	Errors       int64 `json:"errors"`
	// P50Ms and P99Ms are latency percentiles over the region's offered requests, from the
	// intended start (LatencyOf: a request that got no decision, a drop included, is slower than
	// any latency, so a percentile among them is not measurable).
	P50Ms Ms `json:"p50_ms"`
	P99Ms Ms `json:"p99_ms"`
	// Availability is the share of the region's offered requests decided by the limiter
	// (allowed or denied, not an error, a fail policy's answer or a drop) within BudgetMs.
	Availability float64 `json:"availability"`
	// Overspend and FalseDenies are the region's requests the global envelope judged allowed
	// beyond it, or denied with tokens to spare.
	Overspend   int64 `json:"overspend"`
	FalseDenies int64 `json:"false_denies"`
	// CrossRegionCalls counts this region's calls to another region.
	CrossRegionCalls int64 `json:"cross_region_calls"`
}
