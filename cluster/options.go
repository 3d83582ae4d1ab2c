package cluster

import (
	"fmt"
	"os"
	"strings"
	"time"
)

const (
	// DefaultPrimaries is the number of primaries (slot owners) of a local cluster.
	DefaultPrimaries = 3
	// DefaultReplicas is the number of replicas per primary.
	DefaultReplicas = 1
	// DefaultNodeTimeout is cluster-node-timeout: how long a node may be unreachable before it is
	// flagged as failing, and so the shortest time a failover of a killed primary takes.
	DefaultNodeTimeout = 1000 * time.Millisecond
	// DefaultRedisServer is the redis-server binary looked up on PATH.
	DefaultRedisServer = "redis-server"
	// DefaultStartTimeout bounds StartLocal when ctx has no deadline.
	DefaultStartTimeout = 30 * time.Second
	// DefaultStopTimeout is how long Close waits after SIGTERM before it sends SIGKILL.
	DefaultStopTimeout = 3 * time.Second
	// TotalSlots is the number of hash slots of a Redis Cluster.
	TotalSlots = 16384
	// busPortOffset is the distance between a node's client port and its cluster bus port
	// (Redis default when cluster-port is 0).
	busPortOffset = 10000
	// NoReplicas as Options.Replicas asks for primaries only, whatever Primaries is.
	NoReplicas = -1
	// maxPort is the highest TCP port.
	maxPort = 65535
)

// Options configures a local cluster. The zero value is a 3x1 cluster on free loopback ports;
// Options{Primaries: 1} is a single primary without replicas.
type Options struct {
	// Primaries is the number of primaries. 0 means the default topology: DefaultPrimaries (3)
	// primaries, each with DefaultReplicas (1) replica unless Replicas says otherwise.
	Primaries int
	// Replicas is the number of replicas per primary. An explicit count is taken as given
	// (Primaries: 2, Replicas: 0 is 2x0); only with Primaries unset does 0 mean DefaultReplicas
	// (1). NoReplicas (-1) always means none.
	Replicas int
	// BasePort: 0 picks free loopback ports; otherwise nodes use BasePort, BasePort+1, ...
	// Each port p also needs p+10000 free for the cluster bus.
	BasePort int
	// NodeTimeout is cluster-node-timeout; default DefaultNodeTimeout (1000 ms).
	NodeTimeout time.Duration
	// RedisServer is the path or name of redis-server; default "redis-server" on PATH.
	RedisServer string
	// Dir is the parent of the per-cluster temp dir; default os.TempDir().
	Dir string
	// ExtraConfig lines are appended to every node's redis.conf.
	ExtraConfig []string
	// Logf receives progress messages; nil is silent.
	Logf func(format string, args ...any)
	// Detached nodes survive this process (own session, no Pdeathsig); used by `ratelab cluster up`.
	// Close then leaves them running; Stop ends them.
	Detached bool
	// Proxy puts an in-process TCP proxy on a free loopback port in front of every node; the node
	// announces the proxy's port, so every client connection and every replication link flows
	// through it, and Local.SetLatency can delay it. Node.Addr (and Addrs) are then the proxies,
	// Node.RealAddr the redis-servers. The proxies take free ephemeral ports, also with BasePort
	// (which then fixes the real ports). Default false. Not with Detached: the proxies live in
	// this process.
	Proxy bool
	// Partitionable (implies Proxy) lets Local.Partition cut the links between nodes: every node
	// connects from a loopback address of its own (bind-source-addr 127.0.0.N, N >= 2, never
	// 127.0.0.1) and announces a second proxy in front of its cluster bus
	// (cluster-announce-bus-port), so bus and replication traffic both pass through proxies
	// that know which source is which node. Linux only in practice: it needs the whole of
	// 127.0.0.0/8 on the loopback interface. At most 253 nodes. Default false.
	Partitionable bool
	// MinReplicasToWrite is min-replicas-to-write on every node (a primary refuses writes,
	// NOREPLICAS, with fewer replicas connected and acknowledging within MinReplicasMaxLag),
	// set once the cluster is formed and again on a restarted node; 0 keeps Redis' default
	// (off). At most Replicas.
	MinReplicasToWrite int
	// MinReplicasMaxLag is min-replicas-max-lag on every node, in seconds, set as
	// MinReplicasToWrite is; 0 keeps Redis' default (10).
	MinReplicasMaxLag int
	// RequirePass sets a generated random password on every node (requirepass, and masterauth
	// for replication). Local.Password returns it and Local.ClientOptions carries it; it is
	// written only to the nodes' redis.conf and to a mode-0600 file in the cluster's dir, never
	// logged. Default false.
	RequirePass bool
	// TLS, when set, makes every node speak TLS only: tls-port instead of port (so Node.Addr is
	// a TLS port), tls-cluster and tls-replication on, client certificates optional. Not with
	// Proxy or Detached. Default nil (plain TCP). On a loaded machine raise NodeTimeout (e.g.
	// 5 s): a node keeps a MEET in handshake for at most NodeTimeout, and a TLS handshake on
	// the bus can take longer than the default 1 s.
	TLS *TLSFiles

	// password is the generated requirepass, set by StartLocal (not by callers).
	password string
}

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.Primaries == 0 {
		o.Primaries = DefaultPrimaries
		if o.Replicas == 0 {
			o.Replicas = DefaultReplicas
		}
	}
	if o.Replicas < 0 {
		o.Replicas = 0
	}
	if o.Partitionable {
		o.Proxy = true
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = DefaultNodeTimeout
	}
	if o.RedisServer == "" {
		o.RedisServer = DefaultRedisServer
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Validate reports every problem of o at once, each naming the field, the value and the fix.
// It accepts zero values (they mean defaults).
func (o Options) Validate() error {
	var probs []string
	if o.Primaries < 0 || o.Primaries > TotalSlots {
		probs = append(probs, fmt.Sprintf("Primaries = %d: want 1..%d (0 = %d)", o.Primaries, TotalSlots, DefaultPrimaries))
	}
	if o.Replicas < NoReplicas || o.Replicas > 16 {
		probs = append(probs, fmt.Sprintf("Replicas = %d: want 0..16 replicas per primary, or NoReplicas (-1)", o.Replicas))
	}
	if o.NodeTimeout < 0 || (o.NodeTimeout > 0 && o.NodeTimeout < time.Millisecond) {
		probs = append(probs, fmt.Sprintf("NodeTimeout = %v: want >= 1ms (0 = %v)", o.NodeTimeout, DefaultNodeTimeout))
	}
	if o.BasePort != 0 {
		d := o.withDefaults()
		n := d.Primaries * (1 + d.Replicas)
		if o.BasePort < 1024 || o.BasePort+n-1+busPortOffset > maxPort {
			probs = append(probs, fmt.Sprintf("BasePort = %d: want 1024..%d so that %d nodes and their bus ports (+%d) fit, or 0 for free ports",
				o.BasePort, maxPort-busPortOffset-n+1, n, busPortOffset))
		}
	}
	if o.Proxy && o.Detached {
		probs = append(probs, "Proxy = true with Detached = true: the proxies live in this process and would die with it; drop one of them")
	}
	probs = append(probs, o.partitionProblems()...)
	if o.TLS != nil {
		if o.Proxy || o.Detached {
			probs = append(probs, "TLS set with Proxy or Detached: a TLS cluster runs without the latency proxy and in this process; drop one of them")
		}
		if o.TLS.CertFile == "" || o.TLS.KeyFile == "" || o.TLS.CAFile == "" {
			probs = append(probs, fmt.Sprintf("TLS = %s: the nodes need CertFile, KeyFile and CAFile (PEM)", o.TLS))
		}
	}
	for i, line := range o.ExtraConfig {
		if strings.ContainsAny(line, "\r\n") {
			probs = append(probs, fmt.Sprintf("ExtraConfig[%d] = %q: one redis.conf directive per entry, without newlines", i, line))
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("cluster: invalid Options: %s", strings.Join(probs, "; "))
}

// nodeCount is the total number of nodes of a defaulted Options.
func (o Options) nodeCount() int { return o.Primaries * (1 + o.Replicas) }

// maxPartitionable bounds the nodes of a Partitionable cluster: one source address 127.0.0.N
// each, N in 2..254.
const maxPartitionable = 253

// partitionProblems are Validate's findings on Partitionable and the min-replicas options.
func (o Options) partitionProblems() []string {
	var probs []string
	d := o.withDefaults()
	if o.Partitionable {
		if o.Detached {
			probs = append(probs, "Partitionable = true with Detached = true: the proxies that cut the links live in this process and would die with it; drop one of them")
		}
		if o.TLS != nil {
			probs = append(probs, "Partitionable = true with TLS set: a TLS cluster runs without proxies; drop one of them")
		}
		if n := d.nodeCount(); o.Primaries >= 0 && o.Replicas >= NoReplicas && n > maxPartitionable {
			probs = append(probs, fmt.Sprintf("Partitionable = true with %d nodes: at most %d (one source address 127.0.0.N each); use fewer primaries or replicas", n, maxPartitionable))
		}
	}
	if o.MinReplicasToWrite < 0 || (o.MinReplicasToWrite > d.Replicas && o.Replicas >= NoReplicas) {
		probs = append(probs, fmt.Sprintf("MinReplicasToWrite = %d: want 0..%d (Replicas); more would refuse every write (0 = off)", o.MinReplicasToWrite, d.Replicas))
	}
	if o.MinReplicasMaxLag < 0 {
		probs = append(probs, fmt.Sprintf("MinReplicasMaxLag = %d: want >= 0 seconds (0 = Redis' default, 10)", o.MinReplicasMaxLag))
	}
	return probs
}
