package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// refreshTimeout bounds one node's CLUSTER NODES answer in Nodes.
const refreshTimeout = 300 * time.Millisecond

// rootPrefix names every cluster's temp dir; Stop refuses to remove a dir without it.
const rootPrefix = "ratelab-cluster-"

// Local is a Redis Cluster of redis-server processes on 127.0.0.1. It is safe for concurrent use.
type Local struct {
	opts    Options // defaulted
	bin     string  // resolved redis-server path
	root    string  // per-cluster temp dir holding node-<i>/ dirs
	version string
	auth    auth // credentials of every control connection (Options.RequirePass, Options.TLS)
	// adopted: the nodes run elsewhere (Adopt): no process to signal, restart or stop.
	adopted bool
	// live, when set (Adopt), tells which nodes run; otherwise the process does.
	live func(Node) bool
	// owned: Close stops the processes. False for Detached starts and for Attach.
	owned bool

	mu        sync.Mutex
	members   []*member
	proxies   []*proxy   // every proxy ever started (Options.Proxy, Partitionable), closed by Close
	partMu    sync.Mutex // serializes Partition and Heal
	closed    bool
	stateFile string // set by SaveState / Attach; Stop removes it

	closeOnce sync.Once
	closeErr  error
	stopOnce  sync.Once
	stopErr   error
}

// StartLocal starts Primaries x (1+Replicas) redis-server processes on free (or BasePort..)
// loopback ports, forms the cluster and returns once every node reports cluster_state:ok and all
// nodes agree on the slot map and the roles. ctx bounds the whole start (DefaultStartTimeout when
// it has no deadline). On error every process started so far is stopped and its dir removed.
func StartLocal(ctx context.Context, opts Options) (_ *Local, err error) {
	o, bin, err := resolveStart(opts)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	began := time.Now()
	version, err := supportedVersion(ctx, bin)
	if err != nil {
		return nil, err
	}
	n := o.nodeCount()
	var ports []int
	if o.BasePort != 0 {
		if ports, err = reserveBasePorts(o.BasePort, n); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				for _, p := range ports {
					releasePort(p)
				}
			}
		}()
	}
	root, err := makeRoot(o)
	if err != nil {
		return nil, err
	}
	l := &Local{opts: o, bin: bin, root: root, version: version, owned: !o.Detached, members: make([]*member, n)}
	defer func() {
		if err != nil {
			l.owned = true // a failed start leaves nothing behind, detached or not
			_ = l.Close()
		}
	}()
	if err := l.setupAuth(); err != nil {
		return nil, err
	}
	o.Logf("cluster: starting %d redis-server %s nodes (%d primaries x %d replicas) in %s", n, version, o.Primaries, o.Replicas, root)
	if err := l.startMembers(ctx, ports); err != nil {
		return nil, err
	}
	o.Logf("cluster: %d nodes answer PING after %v; forming the cluster", n, time.Since(began).Round(time.Millisecond))
	if err := l.form(ctx); err != nil {
		return nil, err
	}
	if o.Partitionable {
		if err := l.waitFor(ctx, "every bus link through the bus proxies", l.checkBusProxied); err != nil {
			return nil, err
		}
	}
	for _, m := range l.members {
		if err := l.setMinReplicas(ctx, m); err != nil {
			return nil, err
		}
	}
	o.Logf("cluster: ready in %v: %s", time.Since(began).Round(time.Millisecond), strings.Join(l.Addrs(), " "))
	return l, nil
}

// resolveStart validates opts and returns them defaulted, with the redis-server binary found.
func resolveStart(opts Options) (Options, string, error) {
	if err := opts.Validate(); err != nil {
		return Options{}, "", err
	}
	o := opts.withDefaults()
	bin, err := exec.LookPath(o.RedisServer)
	if err != nil {
		return Options{}, "", fmt.Errorf("cluster: Options.RedisServer = %q: %v: %w", o.RedisServer, err, ErrRedisNotFound)
	}
	return o, bin, nil
}

// supportedVersion returns bin's Redis version, or an error when this package does not support it.
func supportedVersion(ctx context.Context, bin string) (string, error) {
	version, err := redisVersion(ctx, bin)
	if err != nil {
		return "", err
	}
	if err := checkVersion(version); err != nil {
		return "", err
	}
	return version, nil
}

// makeRoot creates the cluster's temp dir under o.Dir, first removing the dirs of clusters whose
// owner process was killed. An owned (not detached) cluster's dir records this process as its
// owner, so that a later sweep can tell when it is stale.
func makeRoot(o Options) (string, error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", fmt.Errorf("cluster: Options.Dir = %q: %w", o.Dir, err)
	}
	for _, d := range sweepStale(o.Dir) {
		o.Logf("cluster: removed %s, left by a process that was killed", d)
	}
	root, err := os.MkdirTemp(o.Dir, rootPrefix)
	if err != nil {
		return "", fmt.Errorf("cluster: Options.Dir = %q: %w", o.Dir, err)
	}
	if !o.Detached {
		if err := writeOwner(root); err != nil {
			_ = os.RemoveAll(root)
			return "", fmt.Errorf("cluster: %w", err)
		}
	}
	return root, nil
}

// startMembers starts every node at once, node i on ports[i] (a free port when ports is nil),
// and returns when all answer PING or have failed.
func (l *Local) startMembers(ctx context.Context, ports []int) error {
	errs := make([]error, len(l.members))
	var wg sync.WaitGroup
	for i := range l.members {
		port := 0
		if ports != nil {
			port = ports[i]
		}
		wg.Go(func() { errs[i] = l.startMember(ctx, i, port) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startMember starts node i on port (0 = a free one), retrying with another free port when the
// chosen one was taken between the check and redis-server's bind.
func (l *Local) startMember(ctx context.Context, i, fixedPort int) error {
	dir := filepath.Join(l.root, "node-"+strconv.Itoa(i))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cluster: node dir: %w", err)
	}
	px, busPx, src, err := l.memberProxies(i)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		port := fixedPort
		if port == 0 {
			var err error
			if port, err = reservePort(); err != nil {
				return err
			}
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		node := Node{Addr: addr, Port: port, RealAddr: addr, RealPort: port, Dir: dir}
		if px != nil {
			px.setTarget(addr)
			node.Addr, node.Port = px.addr, px.port
		}
		if busPx != nil {
			busPx.setTarget("127.0.0.1:" + strconv.Itoa(port+busPortOffset))
		}
		m := &member{Node: node, client: l.controlClient(addr), proxy: px, busProxy: busPx, source: src}
		p, err := startProc(l.bin, dir, port, m.announceOf(), l.opts)
		if err != nil {
			_ = m.client.Close()
			releasePort(port)
			return err
		}
		m.proc, m.Pid = p, p.pid
		l.mu.Lock()
		l.members[i] = m
		l.mu.Unlock()
		err = waitServing(ctx, p, addr, dir, l.auth)
		if err == nil {
			// Another program's redis-server may hold the port (our node then exits with "address
			// already in use", possibly after the PING): make sure the answer came from our process.
			pid, perr := serverPid(ctx, m.client)
			switch {
			case perr != nil:
				err = fmt.Errorf("cluster: node %s: INFO server: %w\nlast lines of %s:\n%s", addr, perr,
					filepath.Join(dir, logName), logTail(filepath.Join(dir, logName), logTailLines))
			case pid != p.pid:
				_ = stopProc(p, DefaultStopTimeout)
				err = fmt.Errorf("cluster: port %d answers as redis-server pid %d, not our node pid %d: %w; choose another base port or 0 for free ports",
					port, pid, p.pid, ErrPortBusy)
			default:
				l.opts.Logf("cluster: node %s up (pid %d)", addr, p.pid)
				return nil
			}
		}
		if fixedPort != 0 || !p.exited() || attempt >= portRetries || !(addrInUse(dir) || errors.Is(err, ErrPortBusy)) {
			return err
		}
		l.opts.Logf("cluster: port %d was taken before redis-server bound it; retrying with another", port)
		releasePort(port)
		_ = m.client.Close()
		_ = os.Remove(filepath.Join(dir, "nodes.conf"))
		_ = os.Remove(filepath.Join(dir, logName))
	}
}

// Addrs returns every node's address ("127.0.0.1:PORT"), primaries first as started: the
// address clients must use, which is the node's proxy under Options.Proxy (Node.RealAddr is
// redis-server itself).
func (l *Local) Addrs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.members))
	for _, m := range l.members {
		if m != nil {
			out = append(out, m.Addr)
		}
	}
	return out
}

// Nodes returns the current view of every node, in the order the nodes were started (primaries
// first; for Adopt, as given). Roles are refreshed from CLUSTER NODES of the first node that
// answers (within about 2 s), so they reflect failovers; when no node answers the last known
// view is returned. Pid is 0 for a node whose process has exited.
func (l *Local) Nodes() []Node {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	_, _ = l.refresh(ctx)
	return l.current()
}

// current is every node as last refreshed, in the handle's order, with Pid 0 for a node whose
// process has exited.
func (l *Local) current() []Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Node, 0, len(l.members))
	for _, m := range l.members {
		if m == nil {
			continue
		}
		n := m.Node
		if !l.alive(m) {
			n.Pid = 0
		}
		out = append(out, n)
	}
	return out
}

// Primaries returns the nodes whose current role is RolePrimary.
func (l *Local) Primaries() []Node {
	var out []Node
	for _, n := range l.Nodes() {
		if n.Role == RolePrimary {
			out = append(out, n)
		}
	}
	return out
}

// RedisVersion returns the version of the redis-server binary, e.g. "7.0.15".
func (l *Local) RedisVersion() string { return l.version }

// Dir returns the cluster's temp dir (one node-<i> subdir per node).
func (l *Local) Dir() string { return l.root }

// Detached reports whether the nodes outlive this process (started Detached, or Attach-ed).
func (l *Local) Detached() bool { return !l.owned }

// refresh updates roles and primaries from the first node that answers CLUSTER NODES, and
// returns that node's view.
func (l *Local) refresh(ctx context.Context) ([]nodeLine, error) {
	l.mu.Lock()
	members := append([]*member(nil), l.members...)
	l.mu.Unlock()
	var lastErr error = errors.New("no node answered CLUSTER NODES")
	for _, m := range members {
		if m == nil || m.client == nil || (m.proc != nil && m.proc.exited()) {
			continue
		}
		// A short bound per node, so that one paused node does not use up ctx for the others.
		nctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		s, err := m.client.ClusterNodes(nctx).Result()
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		view, err := parseClusterNodes(s)
		if err != nil {
			lastErr = err
			continue
		}
		l.mu.Lock()
		for _, v := range view {
			for _, mm := range l.members {
				if mm != nil && (mm.ID == v.ID || (mm.ID == "" && mm.Addr == v.Addr)) {
					if r := v.role(); r != "" {
						mm.Role = r
						mm.PrimaryID = v.PrimaryID
					}
				}
			}
		}
		l.mu.Unlock()
		return view, nil
	}
	return nil, lastErr
}

// Close stops every process this Local started (SIGTERM, then SIGKILL after DefaultStopTimeout),
// reaps them and removes the cluster's temp dir. A Local started Detached, or returned by Attach,
// owns no processes: Close then only releases its clients and the nodes keep running (use Stop).
// Close is idempotent and safe to call concurrently; every call returns the first call's result.
func (l *Local) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Local) close() error {
	l.mu.Lock()
	l.closed = true
	owned := l.owned
	var procs []*proc
	for _, m := range l.members {
		if m != nil && m.proc != nil {
			procs = append(procs, m.proc)
		}
	}
	members := append([]*member(nil), l.members...)
	proxies := l.proxies
	l.mu.Unlock()
	var errs []error
	if owned {
		errs = append(errs, stopAll(procs))
	}
	for _, m := range members {
		if m == nil {
			continue
		}
		if m.client != nil {
			_ = m.client.Close()
		}
		if owned {
			releasePort(m.RealPort)
		}
	}
	for _, px := range proxies {
		if err := px.close(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: close proxy %s: %w", px.addr, err))
		}
	}
	if owned && l.root != "" {
		if err := os.RemoveAll(l.root); err != nil {
			errs = append(errs, fmt.Errorf("cluster: remove %s: %w", l.root, err))
		}
	}
	return errors.Join(errs...)
}

// stopAll stops procs in parallel, so a whole cluster stops within one grace period.
func stopAll(procs []*proc) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = stopProc(p, DefaultStopTimeout) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
