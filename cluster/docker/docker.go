package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"

	"ratelab/cluster"
)

const (
	// DefaultImage is the image nodes run when Options.Image is empty: the official Redis 7.
	DefaultImage = "redis:7"
	// dataDir is the nodes' working dir in the container (the official image's VOLUME).
	dataDir = "/data"
	// confPath is where each node's redis.conf is copied before the container starts.
	confPath = dataDir + "/redis.conf"
	// stopGrace bounds a graceful stop before Docker SIGKILLs (Restart of a running node).
	stopGrace = 3 * time.Second
	// pollEvery is the interval of readiness probes.
	pollEvery = 20 * time.Millisecond
	// labelOwner records the pid of the ratelab process that owns a container.
	labelOwner = "ratelab.owner-pid"
	// labelCluster groups the containers of one cluster.
	labelCluster = "ratelab.cluster"
)

// errExited is wrapped when a node's container stops while it should come up.
var errExited = errors.New("exited during startup")

// portRetries bounds restarts of a node whose free port was taken before its container bound it.
const portRetries = 3

// ErrNoDocker is wrapped by Start when no Docker engine answers.
var ErrNoDocker = errors.New("no Docker engine reachable")

// Options configures a docker cluster.
type Options struct {
	// Cluster holds the topology (Primaries, Replicas), NodeTimeout, ExtraConfig and Logf, with
	// the local provider's meaning and defaults (the zero value is 3 primaries x 1 replica).
	// Proxy puts a latency proxy in this process in front of every node (see Cluster.SetLatency).
	// BasePort, RedisServer, Dir, Detached, RequirePass and TLS are not supported here.
	Cluster cluster.Options
	// Image is the image every node runs; default DefaultImage. It must run `redis-server
	// /data/redis.conf` given that as its command (the official image and BuildLocalImage's do).
	Image string
	// Debug also sends testcontainers' own log lines (registry auth lookups, container
	// lifecycle, the Docker engine banner) to Cluster.Logf, each prefixed "testcontainers: ".
	// Default false: they are dropped, and an error testcontainers returns carries the last
	// lines it logged for that node.
	Debug bool
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var probs []string
	c := o.Cluster
	if c.BasePort != 0 || c.Detached || c.RequirePass || c.TLS != nil || c.RedisServer != "" || c.Dir != "" {
		probs = append(probs, "Cluster: BasePort, Detached, RequirePass, TLS, RedisServer and Dir are local-provider options; "+
			"leave them unset with the docker provider")
	}
	if err := c.Validate(); err != nil {
		probs = append(probs, err.Error())
	}
	if strings.ContainsAny(o.Image, " \t\n") {
		probs = append(probs, fmt.Sprintf("Image = %q: want an image reference such as %s", o.Image, DefaultImage))
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("docker: invalid Options: %s", strings.Join(probs, "; "))
}

// Cluster is a Redis Cluster of containers. It implements cluster.Cluster. With
// Options.Cluster.Proxy every node has a latency proxy in this process (host networking puts
// the container and the proxy on the same loopback) and announces the proxy's port
// (cluster-announce-port, replica-announce-port): clients, MOVED/ASK and replication go through
// it, the cluster bus does not, and SetLatency delays them; without Proxy SetLatency wraps
// cluster.ErrUnsupported. Safe for concurrent use.
type Cluster struct {
	ctl     *cluster.Local // adopted: formation, views, targets, resharding
	cli     *client.Client
	ports   []int
	proxies []*cluster.LatencyProxy // by node index; nil entries without Proxy

	mu     sync.Mutex
	nodes  []*node // as started: primaries first
	closed bool

	closeOnce sync.Once
	closeErr  error
}

var _ cluster.Cluster = (*Cluster)(nil)

// node is one container.
type node struct {
	addr   string                // announced: the proxy's with Options.Cluster.Proxy, else real
	real   string                // where redis-server listens in the container
	px     *cluster.LatencyProxy // nil without Proxy
	c      testcontainers.Container
	id     string // container ID
	pid    int    // the container's main process as the Docker engine sees it; 0 when stopped
	killed bool   // Kill-ed and not yet Restart-ed
}

// Start starts the containers on free loopback ports (host network), waits until each answers
// PING, forms the cluster and returns once every node agrees on the slot map. ctx bounds the
// whole start (cluster.DefaultStartTimeout when it has no deadline). On error every container
// started so far is removed. It wraps ErrNoDocker when no Docker engine answers.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Image == "" {
		opts.Image = DefaultImage
	}
	logf := opts.Cluster.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cluster.DefaultStartTimeout)
		defer cancel()
	}
	disableRyuk()
	installDefault()
	defer tcDefault.add(logf, opts.Debug)()
	cli, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cli: cli}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	sweepOrphans(ctx, cli, logf)
	primaries, replicas := opts.Cluster.Topology()
	n := primaries * (1 + replicas)
	if c.ports, err = cluster.ReservePorts(n); err != nil {
		return nil, err
	}
	began := time.Now()
	name := "ratelab-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(began.UnixNano()%1e9, 36)
	logf("docker: starting %d %s containers (%d primaries x %d replicas) with host networking", n, opts.Image, primaries, replicas)
	c.nodes = make([]*node, n)
	c.proxies = make([]*cluster.LatencyProxy, n)
	if opts.Cluster.Proxy {
		for i := range c.proxies {
			if c.proxies[i], err = cluster.NewLatencyProxy(); err != nil {
				return nil, fmt.Errorf("docker: %w", err)
			}
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = c.startNode(ctx, i, name, opts, logf) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	nodes := make([]cluster.Node, n)
	for i, nd := range c.nodes {
		nodes[i] = cluster.Node{Addr: nd.addr, Port: c.ports[i], RealAddr: nd.real, RealPort: c.ports[i], Pid: nd.pid}
		if px := c.proxies[i]; px != nil {
			nodes[i].Port = px.Port()
		}
	}
	c.ctl, err = cluster.Adopt(ctx, cluster.AdoptOptions{Nodes: nodes, Form: true, Primaries: primaries, Live: c.live, Logf: logf})
	if err != nil {
		return nil, err
	}
	logf("docker: cluster ready in %v: %s", time.Since(began).Round(time.Millisecond), strings.Join(c.ctl.Addrs(), " "))
	return c, nil
}

// startNode creates and starts container i and waits for its PING.
// A free port can be taken by another program between the check and the container's bind; the
// node then exits at once. It is retried on another port, as the local provider does.
func (c *Cluster) startNode(ctx context.Context, i int, name string, opts Options, logf func(string, ...any)) error {
	for attempt := 0; ; attempt++ {
		err := c.startNodeOnce(ctx, i, name, attempt, opts, logf)
		if err == nil || !errors.Is(err, errExited) || attempt >= portRetries || ctx.Err() != nil {
			return err
		}
		logf("docker: %v; retrying on another port", err)
		c.mu.Lock()
		nd := c.nodes[i]
		c.nodes[i] = nil
		c.mu.Unlock()
		if _, rerr := c.cli.ContainerRemove(ctx, nd.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil {
			return errors.Join(err, fmt.Errorf("docker: remove failed node container %.12s: %w", nd.id, rerr))
		}
		ports, perr := cluster.ReservePorts(1)
		if perr != nil {
			return errors.Join(err, perr)
		}
		c.mu.Lock()
		cluster.ReleasePorts([]int{c.ports[i]})
		c.ports[i] = ports[0]
		c.mu.Unlock()
	}
}

// startNodeOnce creates and starts container i on c.ports[i] and waits for its PING.
func (c *Cluster) startNodeOnce(ctx context.Context, i int, name string, attempt int, opts Options, logf func(string, ...any)) error {
	c.mu.Lock()
	port := c.ports[i]
	c.mu.Unlock()
	real := "127.0.0.1:" + strconv.Itoa(port)
	addr := real
	conf := cluster.NodeConfig(port, dataDir, opts.Cluster)
	px := c.proxies[i]
	if px != nil {
		px.SetTarget(real)
		addr = px.Addr()
		conf = cluster.NodeConfigBehindProxy(port, px.Port(), dataDir, opts.Cluster)
	}
	req := testcontainers.ContainerRequest{
		Image: opts.Image,
		Name:  fmt.Sprintf("%s-node-%d-%d", name, i, attempt),
		Cmd:   []string{"redis-server", confPath},
		Labels: map[string]string{
			labelOwner: strconv.Itoa(os.Getpid()), labelCluster: name,
		},
		Files: []testcontainers.ContainerFile{{Reader: strings.NewReader(conf), ContainerFilePath: confPath, FileMode: 0o644}},
		HostConfigModifier: func(hc *container.HostConfig) {
			// Host networking: the node binds 127.0.0.1:port itself (see the package doc).
			hc.NetworkMode = "host"
		},
	}
	tcl := newTCLogger(logf, opts.Debug)
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req, Started: true, Logger: tcl,
	})
	if ctr != nil {
		c.mu.Lock()
		c.nodes[i] = &node{addr: addr, real: real, px: px, c: ctr, id: ctr.GetContainerID()}
		c.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("docker: start node %s (image %s): %w", addr, opts.Image, tcl.explain(err))
	}
	if err := c.waitServing(ctx, i); err != nil {
		return err
	}
	return c.refreshPid(ctx, i)
}

// waitServing polls node i with PING until it answers, its container stops, or ctx ends.
func (c *Cluster) waitServing(ctx context.Context, i int) error {
	c.mu.Lock()
	nd := c.nodes[i]
	c.mu.Unlock()
	rc := redis.NewClient(&redis.Options{Addr: nd.real, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second,
		ContextTimeoutEnabled: true, DisableIdentity: true})
	defer rc.Close()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := rc.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if st, serr := c.cli.ContainerInspect(ctx, nd.id, client.ContainerInspectOptions{}); serr == nil && st.Container.State != nil &&
			!st.Container.State.Running {
			return fmt.Errorf("docker: node %s: container %.12s %w with code %d; see `docker logs %.12s`",
				nd.addr, nd.id, errExited, st.Container.State.ExitCode, nd.id)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: node %s did not answer PING: %w (last: %v)", nd.addr, context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// refreshPid records node i's container main pid (0 when it does not run).
func (c *Cluster) refreshPid(ctx context.Context, i int) error {
	c.mu.Lock()
	nd := c.nodes[i]
	c.mu.Unlock()
	st, err := c.cli.ContainerInspect(ctx, nd.id, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker: inspect node %s: %w", nd.addr, err)
	}
	pid := 0
	if s := st.Container.State; s != nil && s.Running {
		pid = s.Pid
	}
	c.mu.Lock()
	nd.pid = pid
	c.mu.Unlock()
	return nil
}

// live tells the adopted control plane which nodes run: all but the Kill-ed ones (a paused
// container still runs, as a SIGSTOPped process does locally).
func (c *Cluster) live(n cluster.Node) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nd := range c.nodes {
		if nd != nil && nd.addr == n.Addr {
			return !nd.killed
		}
	}
	return false
}

// find returns the index of the node on addr.
func (c *Cluster) find(addr string) (int, *node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, nil, fmt.Errorf("docker: node %s: the cluster is closed", addr)
	}
	var all []string
	for i, nd := range c.nodes {
		if nd != nil && (nd.addr == addr || nd.real == addr) {
			return i, nd, nil
		}
		if nd != nil {
			all = append(all, nd.addr)
		}
	}
	return 0, nil, fmt.Errorf("docker: node %q: %w; want one of %v", addr, cluster.ErrUnknownNode, all)
}
