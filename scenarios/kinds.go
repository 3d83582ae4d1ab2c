package scenarios

import "strings"

// LimiterKind names the limiter a scenario runs (limiter.kind).
type LimiterKind string

// Limiter kinds.
const (
	KindTokenBucket   LimiterKind = "token-bucket"   // the Lua token bucket, one decision per call
	KindGCRA          LimiterKind = "gcra"           // generic cell rate: the same limit as a theoretical arrival time
	KindFixedWindow   LimiterKind = "fixed-window"   // at most limit per fixed window
	KindSlidingWindow LimiterKind = "sliding-window" // two fixed windows, weighted
	KindSlidingLog    LimiterKind = "sliding-log"    // a sorted set of the window's requests
	KindTwoTier       LimiterKind = "two-tier"       // a burst bucket and a long quota in one script
	KindLease         LimiterKind = "lease"          // gateways take tokens in leases, decide locally
	KindMemory        LimiterKind = "memory"         // the in-memory twin of the token bucket, no Redis
	KindNoop          LimiterKind = "noop"           // allows everything: the generator alone
	KindRedisRate     LimiterKind = "redis-rate"     // go-redis/redis_rate's GCRA on the run's cluster
	KindGubernator    LimiterKind = "gubernator"     // a gubernator cluster started for the run
)

// limiterKinds are the valid limiter.kind values, in the order error messages list them.
var limiterKinds = []LimiterKind{KindTokenBucket, KindGCRA, KindFixedWindow, KindSlidingWindow, KindSlidingLog, KindTwoTier, KindLease, KindMemory, KindNoop, KindRedisRate, KindGubernator}

// windowKinds count requests per window: their policy is limit and window.
var windowKinds = []LimiterKind{KindFixedWindow, KindSlidingWindow, KindSlidingLog}

// tariffKinds take a bucket per tenant endpoint from tariffs.
var tariffKinds = []LimiterKind{KindTokenBucket, KindMemory}

// ClusterProvider names where a scenario's Redis Cluster comes from (cluster.provider).
type ClusterProvider string

// Cluster providers.
const (
	ProviderLocal    ClusterProvider = "local"    // redis-server processes started for the run
	ProviderDocker   ClusterProvider = "docker"   // containers started for the run
	ProviderRunning  ClusterProvider = "running"  // the cluster `ratelab cluster up` left running
	ProviderExternal ClusterProvider = "external" // a cluster ratelab did not start (cluster.url)
)

// clusterProviders are the valid cluster.provider values, in the order error messages list them.
var clusterProviders = []ClusterProvider{ProviderLocal, ProviderRunning, ProviderDocker, ProviderExternal}

// joinKinds lists kinds for an error message: "a, b, c".
func joinKinds[K ~string](kinds []K) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// orKinds lists kinds for an error message as a choice: "a, b or c".
func orKinds[K ~string](kinds []K) string {
	if len(kinds) < 2 {
		return joinKinds(kinds)
	}
	return joinKinds(kinds[:len(kinds)-1]) + " or " + string(kinds[len(kinds)-1])
}

// LimiterKindChoices lists the limiter kinds as a choice, "token-bucket, gcra, ... or noop", for
// flag help that must name every kind the spec accepts.
func LimiterKindChoices() string { return orKinds(limiterKinds) }
