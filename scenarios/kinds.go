package scenarios

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
)

// ClusterProvider names where a scenario's Redis Cluster comes from (cluster.provider).
type ClusterProvider string

// Cluster providers.
const (
	ProviderLocal    ClusterProvider = "local"    // redis-server processes started for the run
	ProviderDocker   ClusterProvider = "docker"   // containers started for the run
	ProviderRunning  ClusterProvider = "running"  // the cluster `ratelab cluster up` left running
	ProviderExternal ClusterProvider = "external" // a cluster ratelab did not start (cluster.url)
)
