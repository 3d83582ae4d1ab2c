package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// External is a connection to a Redis Cluster someone else runs. It implements Cluster: the
// read-only methods (Nodes, PrimaryFor, ReplOffsets, WaitHealthy, ...) work through Redis
// commands; every fault method returns ErrFaultsRefused unless ExternalConfig.AllowFaults, and
// then MigrateSlots runs while Kill, Pause, Resume, Restart, SetLatency, Partition and Heal wrap
// ErrUnsupported.
type External struct {
	cfg    ExternalConfig
	ctl    *Local // adopted control plane: one client per node
	client *redis.ClusterClient
}

var _ Cluster = (*External)(nil)

// ConnectExternal resolves cfg's password (cfg.Password, else cfg.PasswordFile, else
// $RATELAB_REDIS_PASSWORD), connects and runs read-only checks on every node: it answers, reports
// cluster_state:ok and Redis 7 or newer, and every primary with maxmemory set has at least
// MinFreeMemory free. It reports every failed check at once. Nothing is written.
func ConnectExternal(ctx context.Context, cfg ExternalConfig) (_ *External, err error) {
	if len(cfg.Addrs) == 0 {
		return nil, fmt.Errorf("cluster: external cluster: no address; give --cluster redis://host:port[,host:port...]")
	}
	if err := cfg.resolvePassword(osGetenv); err != nil {
		return nil, err
	}
	// Whatever goes wrong below, the error text must not carry the password.
	defer func() {
		if err != nil {
			err = redactedError{err: err, text: cfg.Redact(err.Error())}
		}
	}()
	tlsConf, err := cfg.TLS.ClientConfig()
	if err != nil {
		return nil, err
	}
	a := auth{user: cfg.User, password: cfg.Password, tls: tlsConf}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	view, err := discover(ctx, cfg.Addrs, a)
	if err != nil {
		return nil, err
	}
	// CLUSTER NODES lists nodes in no useful order (it follows the nodes' IDs): order them the
	// way ratelab starts a cluster, so that node:N means the same here as on a local cluster of
	// the same shape (see External.Nodes).
	var known []nodeLine
	for _, v := range view {
		if !v.has("noaddr") && !v.has("handshake") {
			known = append(known, v)
		}
	}
	nodes := make([]Node, 0, len(known))
	for _, v := range slotOrder(known) {
		nodes = append(nodes, Node{ID: v.ID, Addr: v.Addr, Role: v.role(), PrimaryID: v.PrimaryID})
	}
	ctl, err := Adopt(ctx, AdoptOptions{Nodes: nodes, User: a.user, Password: a.password, TLS: a.tls})
	if err != nil {
		return nil, err
	}
	e := &External{cfg: cfg, ctl: ctl}
	defer func() {
		if err != nil {
			_ = e.Close()
		}
	}()
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	o := e.ClientOptions()
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	e.client = redis.NewClusterClient(o)
	return e, nil
}

// discover returns CLUSTER NODES of the first seed that answers.
func discover(ctx context.Context, seeds []string, a auth) ([]nodeLine, error) {
	var probs []string
	for _, addr := range seeds {
		o := nodeClientOptions(addr)
		a.apply(o)
		c := redis.NewClient(o)
		s, err := c.ClusterNodes(ctx).Result()
		_ = c.Close()
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: CLUSTER NODES: %v", addr, err))
			continue
		}
		view, err := parseClusterNodes(s)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: %v", addr, err))
			continue
		}
		return view, nil
	}
	return nil, fmt.Errorf("cluster: external cluster: no seed answered: %s (check the addresses, the password ($%s or --password-file) and TLS)",
		strings.Join(probs, "; "), PasswordEnv)
}

// check runs ConnectExternal's read-only checks on every node.
func (e *External) check(ctx context.Context) error {
	minFree := e.cfg.MinFreeMemory
	if minFree == 0 {
		minFree = DefaultMinFreeMemory
	}
	e.ctl.mu.Lock()
	members := append([]*member(nil), e.ctl.members...)
	e.ctl.mu.Unlock()
	var probs []string
	for _, m := range members {
		s, err := m.client.ClusterInfo(ctx).Result()
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: CLUSTER INFO: %v", m.Addr, err))
			continue
		}
		if st := parseInfo(s)["cluster_state"]; st != "ok" {
			probs = append(probs, fmt.Sprintf("%s: cluster_state:%s, want ok (fix the cluster before measuring it)", m.Addr, st))
		}
		s, err = m.client.Info(ctx, "server", "memory").Result()
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: INFO: %v", m.Addr, err))
			continue
		}
		info := parseInfo(s)
		if v := info["redis_version"]; checkVersion(v) != nil {
			probs = append(probs, fmt.Sprintf("%s: redis_version %q, want 7.0 or newer (ratelab's scripts and commands need Redis 7)", m.Addr, v))
		}
		if m.Role != RolePrimary || minFree < 0 {
			continue
		}
		maxMem, _ := strconv.ParseInt(info["maxmemory"], 10, 64)
		used, _ := strconv.ParseInt(info["used_memory"], 10, 64)
		if maxMem > 0 && maxMem-used < minFree {
			probs = append(probs, fmt.Sprintf("%s: used_memory %d of maxmemory %d leaves %d bytes, below the minimum of %d (MinFreeMemory): free memory there or lower the minimum",
				m.Addr, used, maxMem, maxMem-used, minFree))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("cluster: external cluster %s failed its checks: %s", strings.Join(e.cfg.Addrs, ","), strings.Join(probs, "; "))
	}
	return nil
}

// Config returns the configuration (its String form is safe to print).
func (e *External) Config() ExternalConfig { return e.cfg }

// Client returns the cluster client ConnectExternal opened (closed by Close).
func (e *External) Client() *redis.ClusterClient { return e.client }

// ClientOptions returns go-redis cluster options that reach the cluster with its credentials
// and TLS; callers add timeouts and pool sizes.
func (e *External) ClientOptions() *redis.ClusterOptions {
	o := e.ctl.ClientOptions()
	o.Addrs = append([]string(nil), e.cfg.Addrs...)
	return o
}

// Addrs returns every node's address as the cluster announces it, in the order of Nodes.
func (e *External) Addrs() []string { return e.ctl.Addrs() }

// Nodes returns the current view of every node (roles refreshed), in the order ConnectExternal
// found them in, which is how a local cluster of that shape starts its nodes: the primaries that
// serve slots by their lowest slot, primaries without slots by address, then the replicas in
// rounds (the first replica of each primary in that order, then the second, ...), then any other
// node by address. Nodes that join later are not listed. Pid is 0: the processes are not ours to
// see.
func (e *External) Nodes() []Node { return e.ctl.Nodes() }

// Shards returns the shards in slot order from the current slot map (see Local.Shards).
func (e *External) Shards(ctx context.Context) ([]Shard, error) { return e.ctl.Shards(ctx) }

// Primaries returns the nodes whose current role is RolePrimary.
func (e *External) Primaries() []Node { return e.ctl.Primaries() }

// RedisVersion returns the first node's redis_version.
func (e *External) RedisVersion() string { return e.ctl.RedisVersion() }

// PrimaryFor returns the primary that serves slot.
func (e *External) PrimaryFor(slot int) (Node, error) { return e.ctl.PrimaryFor(slot) }

// ReplicasOf returns the replicas of the primary on primaryAddr.
func (e *External) ReplicasOf(primaryAddr string) []Node { return e.ctl.ReplicasOf(primaryAddr) }

// ReplOffsets reads INFO replication of the primary on primaryAddr (read-only).
func (e *External) ReplOffsets(ctx context.Context, primaryAddr string) (int64, map[string]int64, error) {
	return e.ctl.ReplOffsets(ctx, primaryAddr)
}

// WaitHealthy polls until every node agrees on a fully served slot map (read-only).
func (e *External) WaitHealthy(ctx context.Context) error { return e.ctl.WaitHealthy(ctx) }

// Kill is refused (ErrFaultsRefused) or, with AllowFaults, unsupported (ErrUnsupported).
func (e *External) Kill(addr string) error { return e.cfg.errFaults("kill " + addr) }

// Pause is refused (ErrFaultsRefused) or, with AllowFaults, unsupported (ErrUnsupported).
func (e *External) Pause(addr string) error { return e.cfg.errFaults("pause " + addr) }

// Resume is refused (ErrFaultsRefused) or, with AllowFaults, unsupported (ErrUnsupported).
func (e *External) Resume(addr string) error { return e.cfg.errFaults("resume " + addr) }

// Restart is refused (ErrFaultsRefused) or, with AllowFaults, unsupported (ErrUnsupported).
func (e *External) Restart(_ context.Context, addr string) error {
	return e.cfg.errFaults("restart " + addr)
}

// SetLatency is refused (ErrFaultsRefused) or, with AllowFaults, unsupported (ErrUnsupported).
func (e *External) SetLatency(addr string, _, _ time.Duration) error {
	return e.cfg.errFaults("latency on " + addr)
}

// Partition is refused (ErrFaultsRefused) or, with AllowFaults, unsupported (ErrUnsupported).
func (e *External) Partition(_ context.Context, isolated []string) error {
	return e.cfg.errFaults("partition of " + strings.Join(isolated, ","))
}

// Heal is refused (ErrFaultsRefused) or, with AllowFaults, unsupported (ErrUnsupported).
func (e *External) Heal(context.Context) error { return e.cfg.errFaults("heal") }

// NodesSeenBy reads CLUSTER NODES of the node on addr (read-only).
func (e *External) NodesSeenBy(ctx context.Context, addr string) ([]NodeView, error) {
	return e.ctl.NodesSeenBy(ctx, addr)
}

// MigrateSlots moves slots between primaries as Local.MigrateSlots does, only with AllowFaults
// (it changes the cluster's slot map, which its owners may not expect).
func (e *External) MigrateSlots(ctx context.Context, n int, from, to string, opts ...MigrateOption) (MigrateResult, error) {
	if !e.cfg.AllowFaults {
		return MigrateResult{}, e.cfg.errFaults("reshard " + from + " -> " + to)
	}
	return e.ctl.MigrateSlots(ctx, n, from, to, opts...)
}

// Close closes every client; the cluster itself is untouched.
func (e *External) Close() error {
	var err error
	if e.client != nil {
		err = e.client.Close()
	}
	if cerr := e.ctl.Close(); err == nil {
		err = cerr
	}
	return err
}

// redactedError keeps the wrapped chain (errors.Is still works) but prints a redacted text.
type redactedError struct {
	err  error
	text string
}

func (r redactedError) Error() string { return r.text }
func (r redactedError) Unwrap() error { return r.err }
