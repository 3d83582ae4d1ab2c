package cluster

import "errors"

// ErrRedisNotFound is wrapped by StartLocal when the redis-server binary cannot be found.
var ErrRedisNotFound = errors.New("redis-server not found: install it with `make redis` " +
	"(apt-get install redis-server / brew install redis) or set Options.RedisServer to its path")

// ErrPortBusy is wrapped when a port requested through Options.BasePort is already in use.
var ErrPortBusy = errors.New("port busy")

// ErrNotReady is wrapped when the cluster did not reach cluster_state:ok with an agreed slot map
// before the deadline.
var ErrNotReady = errors.New("cluster not ready")

// ErrNodeStart is wrapped when a redis-server process exits or does not answer during startup.
var ErrNodeStart = errors.New("redis-server node failed to start")

// ErrUnknownNode is wrapped when an address does not belong to the cluster.
var ErrUnknownNode = errors.New("unknown node")

// ErrNoState is wrapped by Attach, Down and ReadStatus when the state file does not exist.
var ErrNoState = errors.New("no running detached cluster")

// ErrNotRunning is wrapped by Attach when a recorded node is not running or does not answer.
var ErrNotRunning = errors.New("cluster not running")

// ErrAlreadyRunning is wrapped by Up when the state file records a cluster that still runs.
var ErrAlreadyRunning = errors.New("a detached cluster is already running")

// ErrNoOwner is wrapped by PrimaryFor when no primary serves a slot.
var ErrNoOwner = errors.New("no primary serves the slot")

// ErrNoProxy is wrapped by SetLatency when the cluster was started without Options.Proxy.
var ErrNoProxy = errors.New("no latency proxy")

// ErrMigration is wrapped by MigrateSlots when a step of a slot's migration fails.
var ErrMigration = errors.New("slot migration failed")
