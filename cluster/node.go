package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Node roles as reported by Node.Role.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
)

const (
	confName = "redis.conf"
	logName  = "redis.log"
	// logTailLines is how much of a node's log a startup error carries.
	logTailLines = 20
	// readyPoll is the interval between readiness probes (PING, CLUSTER INFO). Polling against a
	// deadline, not sleeping a guessed time.
	readyPoll = 20 * time.Millisecond
	// probeTimeout bounds one readiness probe or one formation command.
	probeTimeout = 2 * time.Second
	// portRetries bounds restarts of a node whose free port was taken between check and bind.
	portRetries = 5
)

// Node describes one redis-server of the cluster.
type Node struct {
	// ID is the 40-character cluster node ID.
	ID string `json:"id"`
	// Addr is "127.0.0.1:PORT", the address the node announces to the cluster and the one clients
	// (and replicas) must use: the node's latency proxy when the cluster runs with Options.Proxy,
	// otherwise redis-server itself.
	Addr string `json:"addr"`
	// Port is the port of Addr.
	Port int `json:"port"`
	// RealAddr is where redis-server itself listens ("127.0.0.1:PORT"); it equals Addr without a
	// proxy. Signals, control commands and the cluster bus (RealPort+10000) use it.
	RealAddr string `json:"real_addr,omitempty"`
	// RealPort is the port of RealAddr.
	RealPort int `json:"real_port,omitempty"`
	// Role is RolePrimary or RoleReplica; it changes after a failover (Local.Nodes refreshes it).
	Role string `json:"role"`
	// PrimaryID is the ID of the primary a replica follows; "" for a primary.
	PrimaryID string `json:"primary_id,omitempty"`
	// Pid is the redis-server process ID; 0 if it is not running.
	Pid int `json:"pid"`
	// Dir holds the node's redis.conf, nodes.conf and redis.log.
	Dir string `json:"dir"`
}

// proc is one running redis-server started by this process. done is closed once the process has
// exited and been reaped (no zombies): a goroutine sits in cmd.Wait for its whole life.
type proc struct {
	cmd     *exec.Cmd
	pid     int
	done    chan struct{}
	waitErr error // valid after done is closed
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// member is the Local's record of one node: its description, its process (nil when attached)
// and a client for control commands.
type member struct {
	Node
	proc   *proc
	client *redis.Client // control client on RealAddr: latency faults never slow it down
	proxy  *proxy        // nil without Options.Proxy
	// busProxy forwards to the cluster bus (RealPort+10000) and source is the loopback address
	// the node connects from (bind-source-addr); both only with Options.Partitionable.
	busProxy *proxy
	source   netip.Addr
}

// announce is what a node announces instead of its own ports, and where it connects from.
type announce struct {
	port    int        // the client proxy's port; 0 = no proxy
	busPort int        // the bus proxy's port; 0 = the real bus port (RealPort+10000)
	source  netip.Addr // bind-source-addr; the zero Addr leaves it to the kernel
}

// announceOf is what m's node announces.
func (m *member) announceOf() announce {
	a := announce{source: m.source}
	if m.proxy != nil {
		a.port = m.proxy.port
	}
	if m.busProxy != nil {
		a.busPort = m.busProxy.port
	}
	return a
}

// has reports whether addr is m's announced or real address.
func (m *member) has(addr string) bool { return m.Addr == addr || m.RealAddr == addr }

// nodeConfig renders a node's redis.conf; ann says what it announces and where it connects from
// (the zero announce: no proxy). Units: cluster-node-timeout is in milliseconds.
func nodeConfig(port int, ann announce, dir string, opts Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "port %d\n", port)
	b.WriteString(authConfig(port, opts)) // under TLS: port 0 and tls-port instead
	b.WriteString("bind 127.0.0.1\n")
	// A node learns its own IP only from a MEET; a lone primary would otherwise announce ":PORT".
	b.WriteString("cluster-announce-ip 127.0.0.1\n")
	b.WriteString("protected-mode yes\n")
	b.WriteString("daemonize no\n")
	fmt.Fprintf(&b, "dir %q\n", dir)
	b.WriteString("logfile \"\"\n") // stdout, which is redis.log: one file also holds config errors
	b.WriteString("cluster-enabled yes\n")
	b.WriteString("cluster-config-file nodes.conf\n")
	fmt.Fprintf(&b, "cluster-node-timeout %d\n", opts.NodeTimeout.Milliseconds())
	// 0: a replica may fail over however long it was disconnected; otherwise a quiet test cluster
	// can refuse automatic failover ("Disconnected from master for longer than allowed").
	b.WriteString("cluster-replica-validity-factor 0\n")
	b.WriteString("cluster-require-full-coverage yes\n")
	b.WriteString("save \"\"\n")
	b.WriteString("appendonly no\n")
	b.WriteString("enable-debug-command local\n")
	// A replica's first sync is diskless; the default 5 s delay (waiting for more replicas to
	// share one transfer) would dominate the start time of an empty cluster.
	b.WriteString("repl-diskless-sync-delay 0\n")
	b.WriteString(announceConfig(port, ann))
	for _, line := range opts.ExtraConfig {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// announceConfig renders the redis.conf lines of a node behind a proxy on ann.port: the
// cluster (CLUSTER NODES / SLOTS, MOVED, ASK) and INFO replication name the proxy's port, so
// clients and replicas connect through it. The bus keeps the real port+10000 (a latency fault
// must not make the nodes flag each other as failing) unless ann.busPort names a bus proxy
// (Options.Partitionable). ann.source makes the node's own connections (replication, cluster
// bus) leave from that loopback address, so that the proxies can tell which node dialed them.
// "" for the zero announce.
func announceConfig(port int, ann announce) string {
	var b strings.Builder
	if ann.port != 0 {
		bus := port + busPortOffset
		if ann.busPort != 0 {
			bus = ann.busPort
		}
		fmt.Fprintf(&b, "cluster-announce-port %d\ncluster-announce-bus-port %d\nreplica-announce-ip 127.0.0.1\nreplica-announce-port %d\n",
			ann.port, bus, ann.port)
	}
	if ann.source.IsValid() {
		fmt.Fprintf(&b, "bind-source-addr %s\n", ann.source)
	}
	return b.String()
}

// startProc writes dir/redis.conf and starts redis-server on port (announcing and connecting
// from what ann says) from the spawner thread. The node's stdout and stderr go straight (as an
// inherited file descriptor) to dir/redis.log, so a detached node keeps logging after this
// process exits.
func startProc(bin, dir string, port int, ann announce, opts Options) (*proc, error) {
	conf := filepath.Join(dir, confName)
	if err := os.WriteFile(conf, []byte(nodeConfig(port, ann, dir, opts)), 0o600); err != nil {
		return nil, fmt.Errorf("cluster: write %s: %w", conf, err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cluster: open node log: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	cmd := exec.Command(bin, conf)
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr(opts.Detached)
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("cluster: start %s for port %d: %w", bin, port, err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitServing polls addr with PING until it answers +PONG, the process exits or ctx ends.
func waitServing(ctx context.Context, p *proc, addr, dir string, a auth) error {
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		if pingRaw(ctx, addr, a) == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("cluster: node %s (pid %d) exited during startup (%v): %w\nlast lines of %s:\n%s",
				addr, p.pid, p.waitErr, ErrNodeStart, filepath.Join(dir, logName), logTail(filepath.Join(dir, logName), logTailLines))
		case <-ctx.Done():
			return fmt.Errorf("cluster: node %s (pid %d) did not answer PING: %w: %w\nlast lines of %s:\n%s",
				addr, p.pid, ErrNodeStart, context.Cause(ctx), filepath.Join(dir, logName), logTail(filepath.Join(dir, logName), logTailLines))
		case <-t.C:
		}
	}
}

// serverPid asks the node on addr for its process_id (INFO server).
func serverPid(ctx context.Context, c *redis.Client) (int, error) {
	s, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(parseInfo(s)["process_id"])
}

// logTail returns the last n lines of a file, or a note saying why it cannot.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + string(bytes.Join(lines, []byte("\n  ")))
}

// addrInUse reports whether a node's log says it could not bind its port or bus port.
func addrInUse(dir string) bool {
	b, _ := os.ReadFile(filepath.Join(dir, logName))
	return bytes.Contains(bytes.ToLower(b), []byte("address already in use"))
}

// nodeClientOptions are the options of a small control client for one node (Local.controlClient
// adds credentials): no retries (formation decides what to retry), context deadlines honoured,
// no CLIENT SETINFO / MAINT_NOTIFICATIONS chatter.
func nodeClientOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                     addr,
		DialTimeout:              probeTimeout,
		ReadTimeout:              probeTimeout,
		WriteTimeout:             probeTimeout,
		MaxRetries:               -1,
		PoolSize:                 2,
		ContextTimeoutEnabled:    true,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// redisVersion runs `redis-server --version` ("Redis server v=7.0.15 sha=...") and returns
// "7.0.15".
func redisVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("cluster: %s --version: %w", bin, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("cluster: cannot read a version from %s --version output %q", bin, strings.TrimSpace(string(out)))
}

// checkVersion rejects Redis before 7.0 (CLUSTER ADDSLOTSRANGE and the Lua semantics ratelab
// measures need 7).
func checkVersion(v string) error {
	major, _, _ := strings.Cut(v, ".")
	m, err := strconv.Atoi(major)
	if err != nil || m < 7 {
		return fmt.Errorf("cluster: redis-server version %q is too old: want 7.0 or newer; install it with `make redis`", v)
	}
	return nil
}

// stopProc sends SIGTERM, waits up to grace for the exit, then SIGKILLs and waits for the reap.
func stopProc(p *proc, grace time.Duration) error {
	if p == nil || p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = p.cmd.Process.Kill()
	}
	_ = p.cmd.Process.Signal(sigResume) // a paused node handles the SIGTERM only once continued
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("cluster: kill pid %d: %w", p.pid, err)
	}
	<-p.done
	return nil
}
