package gubernator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"ratelab/cluster"
)

// Defaults of Options.
const (
	// DefaultDaemons is the cluster's size without Options.Daemons.
	DefaultDaemons = 3
	// DefaultReadyTimeout bounds Start's wait for every daemon's health check.
	DefaultReadyTimeout = 20 * time.Second
	// DefaultStopTimeout is how long Close waits after SIGTERM before it sends SIGKILL.
	DefaultStopTimeout = 3 * time.Second
	// BinaryEnv names the environment variable that points at gubernatord.
	BinaryEnv = "RATELAB_GUBERNATORD"
	// BinaryName is the daemon's file name in bin/ and on PATH.
	BinaryName = "gubernatord"
)

// Options configure Start.
type Options struct {
	// Daemons is how many daemons form the cluster, 1..16; default DefaultDaemons.
	Daemons int
	// Binary is gubernatord's path; default FindBinary's.
	Binary string
	// Env adds GUBER_* settings to every daemon (e.g. GUBER_GLOBAL_SYNC_WAIT=100ms).
	Env map[string]string
	// Dir holds the daemons' logs; default a temp dir removed by Close.
	Dir string
	// ReadyTimeout bounds the wait for every daemon to answer its health check with all its
	// peers; default DefaultReadyTimeout.
	ReadyTimeout time.Duration
}

// Cluster is a running gubernator cluster started by Start. Its methods are safe for concurrent
// use except Close, which ends it.
type Cluster struct {
	mu      sync.Mutex // serializes starts and Close; closed refuses starts after Close
	closed  bool
	opts    Options
	dir     string
	ownDir  bool
	daemons []*daemon
	// routes[i][j] is daemon i's forwarder to daemon j (nil on the diagonal).
	routes [][]*cluster.Forwarder
}

// daemon is one gubernatord: its addresses, and its process while it runs.
type daemon struct {
	grpc, http string
	env        []string
	log        string
	proc       *proc
}

// proc is a started daemon process; done closes when it has exited and been reaped.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// FindBinary returns gubernatord's path: $RATELAB_GUBERNATORD, gubernatord on PATH, or
// bin/gubernatord in the working directory or one of its parents (the repository's, where `make
// gubernator` puts it).
func FindBinary() (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath(BinaryName); err == nil {
		return p, nil
	}
	dir, err := os.Getwd()
	for err == nil {
		p := filepath.Join(dir, "bin", BinaryName)
		if st, serr := os.Stat(p); serr == nil && !st.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("gubernator: %s not found ($%s, PATH, bin/ of the working directory or a parent): build it with `make gubernator`", BinaryName, BinaryEnv)
}

// Start starts opts.Daemons daemons on free loopback ports, each knowing all of them, and waits
// until every one reports itself healthy with all its peers. On error it stops what it started.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Daemons == 0 {
		opts.Daemons = DefaultDaemons
	}
	if opts.Daemons < 1 || opts.Daemons > 16 {
		return nil, fmt.Errorf("gubernator: %d daemons: want 1..16", opts.Daemons)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.Binary == "" {
		if opts.Binary, err = FindBinary(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{opts: opts, dir: opts.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "ratelab-gubernator-"); err != nil {
			return nil, fmt.Errorf("gubernator: %w", err)
		}
		c.ownDir = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	for attempt := 1; ; attempt++ {
		err = c.launch(ctx)
		if err == nil || attempt == startAttempts || !strings.Contains(err.Error(), "address already in use") {
			return c, err
		}
		// A port freePorts found free was taken before the daemon bound it (another process
		// of the machine, a parallel test): lay the cluster out again on new ports.
		if serr := c.stopAll(); serr != nil {
			return c, errors.Join(err, serr)
		}
		for _, d := range c.daemons {
			_ = os.Remove(d.log)
		}
	}
}

// startAttempts is how many layouts Start tries when a daemon finds its port taken.
const startAttempts = 3

// launch lays the cluster out on free ports, starts every daemon and waits until they are
// healthy.
func (c *Cluster) launch(ctx context.Context) error {
	if err := c.layout(); err != nil {
		return err
	}
	for i := range c.daemons {
		if err := c.start(i); err != nil {
			return err
		}
	}
	return c.WaitHealthy(ctx)
}

// layout picks every daemon's ports, builds the forwarders between them and each daemon's
// environment.
func (c *Cluster) layout() error {
	n := c.opts.Daemons
	ports, err := pickPorts(2 * n)
	if err != nil {
		return err
	}
	peers := make([]string, n)
	c.daemons = make([]*daemon, n)
	for i := range c.daemons {
		d := &daemon{grpc: "127.0.0.1:" + strconv.Itoa(ports[2*i]), http: "127.0.0.1:" + strconv.Itoa(ports[2*i+1]),
			log: filepath.Join(c.dir, "gubernatord-"+strconv.Itoa(i)+".log")}
		c.daemons[i], peers[i] = d, d.grpc
	}
	c.routes = make([][]*cluster.Forwarder, n)
	for i, d := range c.daemons {
		c.routes[i] = make([]*cluster.Forwarder, n)
		var routes []string
		for j, p := range c.daemons {
			if i == j {
				continue
			}
			f, err := cluster.NewForwarder(p.grpc)
			if err != nil {
				return fmt.Errorf("gubernator: forwarder %d->%d: %w", i, j, err)
			}
			c.routes[i][j] = f
			routes = append(routes, p.grpc+"="+f.Addr())
		}
		d.env = append(os.Environ(),
			"GUBER_PEER_DISCOVERY_TYPE=none", "GUBER_GRPC_ADDRESS="+d.grpc, "GUBER_ADVERTISE_ADDRESS="+d.grpc,
			"GUBER_HTTP_ADDRESS="+d.http, "GUBER_INSTANCE_ID=ratelab-"+strconv.Itoa(i), "GUBER_LOG_LEVEL=warn",
			"OTEL_TRACES_EXPORTER=none", "RATELAB_GUBER_PEERS="+strings.Join(peers, ","),
			"RATELAB_GUBER_ROUTES="+strings.Join(routes, ","))
		for k, v := range c.opts.Env {
			d.env = append(d.env, k+"="+v)
		}
	}
	return nil
}

// pickPorts is freePorts; a test replaces it to hand Start a port already taken.
var pickPorts = freePorts

// freePorts returns n distinct free loopback ports. A port can be taken between this check and
// the daemon's bind; Start then lays the cluster out again on new ports (startAttempts).
func freePorts(n int) ([]int, error) {
	out := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("gubernator: a free port: %w", err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// start forks daemon i (from cluster's spawner: Pdeathsig) with its log appended to.
func (c *Cluster) start(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("gubernator: daemon %d: the cluster is closed", i)
	}
	d := c.daemons[i]
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("gubernator: daemon %d log: %w", i, err)
	}
	defer logf.Close() // the child holds its own descriptor
	cmd := exec.Command(c.opts.Binary)
	cmd.Env, cmd.Stdout, cmd.Stderr = d.env, logf, logf
	if err := cluster.StartChild(cmd); err != nil {
		return fmt.Errorf("gubernator: start daemon %d (%s): %w", i, c.opts.Binary, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	d.proc = p
	return nil
}

// HTTPAddrs are the daemons' HTTP gateways ("127.0.0.1:PORT"), by daemon index: what clients use.
func (c *Cluster) HTTPAddrs() []string {
	out := make([]string, len(c.daemons))
	for i, d := range c.daemons {
		out[i] = d.http
	}
	return out
}

// GRPCAddrs are the daemons' gRPC addresses: their names on the hash ring and in answers.
func (c *Cluster) GRPCAddrs() []string {
	out := make([]string, len(c.daemons))
	for i, d := range c.daemons {
		out[i] = d.grpc
	}
	return out
}

// Pids are the daemons' process IDs, 0 for one that is not running.
func (c *Cluster) Pids() []int {
	out := make([]int, len(c.daemons))
	for i, d := range c.daemons {
		if d.proc != nil && !d.proc.exited() {
			out[i] = d.proc.cmd.Process.Pid
		}
	}
	return out
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitHealthy returns once every running daemon answers /v1/HealthCheck as healthy with all its
// peers, or with the first daemon's log tail when ReadyTimeout passes or a daemon exits. A daemon
// that met an error with a peer reports itself unhealthy for gubernator's 5 minutes after it
// (peer_client.go keeps its last errors with that TTL): after a fault, use WaitServing.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return c.wait(ctx, "healthy", func(h healthReply, err error) bool { return err == nil && h.healthy(len(c.daemons)) }, c.all()...)
}

func answered(_ healthReply, err error) bool { return err == nil }

// all is every daemon's index.
func (c *Cluster) all() []int {
	out := make([]int, len(c.daemons))
	for i := range out {
		out[i] = i
	}
	return out
}

// wait polls the health check of daemons until ok holds for each, bounded by ReadyTimeout.
func (c *Cluster) wait(ctx context.Context, what string, ok func(healthReply, error) bool, daemons ...int) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for _, i := range daemons {
		d := c.daemons[i]
		for {
			if d.proc == nil || d.proc.exited() {
				return fmt.Errorf("gubernator: daemon %d exited: %s", i, tail(d.log))
			}
			h, err := health(ctx, hc, d.http)
			if ok(h, err) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("gubernator: daemon %d not %s (%v, %+v): %w; log: %s", i, what, err, h, ctx.Err(), tail(d.log))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// tail is the end of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 1500 {
		s = "..." + s[len(s)-1500:]
	}
	return s
}

// Close stops every daemon (SIGTERM, SIGKILL after DefaultStopTimeout), closes the forwarders and
// removes its own temp dir. Idempotent.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.closed = true // no Restart starts a daemon from here on
	c.mu.Unlock()
	err := c.stopAll()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ownDir {
		err = errors.Join(err, os.RemoveAll(c.dir))
		c.ownDir = false
	}
	return err
}

// stopAll stops every daemon and closes every forwarder between them.
func (c *Cluster) stopAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i, d := range c.daemons {
		if err := stop(d.proc); err != nil {
			errs = append(errs, fmt.Errorf("gubernator: stop daemon %d: %w", i, err))
		}
		d.proc = nil
	}
	for _, row := range c.routes {
		for _, f := range row {
			if f != nil {
				errs = append(errs, f.Close())
			}
		}
	}
	c.routes = nil
	return errors.Join(errs...)
}

// stop sends SIGTERM (and SIGCONT, for a paused daemon), then SIGKILL after DefaultStopTimeout,
// and waits for the reap.
func stop(p *proc) error {
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-p.done:
		return nil
	case <-time.After(DefaultStopTimeout):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.done
	return nil
}
