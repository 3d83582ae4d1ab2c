package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/lua"
	"ratelab/results"
	"ratelab/scenarios"
)

// store is the run's Redis side: the cluster, the client the limiters use with its per-node
// counters, and for an external cluster the key prefix that keeps the run's keys apart.
type store struct {
	cl       cluster.Cluster
	client   *redis.ClusterClient
	counters *nodeCounters
	// cleanup deletes an external run's keys (once; a no-op on other providers) and leaves what
	// it did in note.
	cleanup     func() error
	note        string
	prefix      string       // an external run's key prefix ("" otherwise)
	lastReload  atomic.Int64 // UnixNano of the last slot-map reload
	reloadEvery time.Duration
}

// reloadEvery bounds how often store errors make the client re-read the slot map.
const reloadEvery = 100 * time.Millisecond

// openStore starts, attaches to or connects to the spec's cluster and builds the client every
// limiter of the run shares, with its pools warmed.
func (s *Session) openStore(ctx context.Context) (*store, error) {
	spec := s.Spec
	if err := checkProviderFaults(spec, s.opts); err != nil {
		return nil, err
	}
	cl, err := openCluster(ctx, spec, s.opts, s.logf)
	if err != nil {
		return nil, err
	}
	s.onClose(cl.Close)
	s.env.Provider = string(spec.Cluster.Provider)
	if s.opts.sharedLocal {
		s.env.Provider = string(scenarios.ProviderLocal) // where it ran; "running" is how it got there
	}
	s.env.RedisVersion = cl.RedisVersion()
	s.env.Durability = spec.DurabilityName()
	s.env.Primaries = len(cl.Primaries())
	if p := len(cl.Primaries()); p > 0 {
		s.env.Replicas = (len(cl.Nodes()) - p) / p
	}
	st := &store{cl: cl, counters: newNodeCounters(s.secs), cleanup: func() error { return nil }, reloadEvery: reloadEvery}
	st.client = newClusterClient(cl.ClientOptions(), time.Duration(spec.Limiter.Timeout), spec.Load.Concurrency, st.counters)
	s.onClose(st.client.Close)
	if spec.Cluster.Provider == scenarios.ProviderExternal {
		if err := st.prefixKeys(ctx, s.Dir, s.logf); err != nil {
			return nil, err
		}
		s.onClose(st.cleanup)
	}
	warmPools(ctx, st.client, spec.Load.Concurrency)
	return st, nil
}

// prefixKeys makes every key of the run carry the run's prefix on a shared cluster; cleanup
// then deletes exactly those keys, also when the run fails half-way.
func (st *store) prefixKeys(ctx context.Context, dir string, logf func(string, ...any)) error {
	prefix, err := runKeyPrefix(dir)
	if err != nil {
		return err
	}
	st.prefix = prefix
	st.client.AddHook(prefixHook{prefix: prefix})
	var once sync.Once
	var cerr error
	st.cleanup = func() error {
		once.Do(func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			// Not the decision client: its timeouts are the limiter's (milliseconds), and an
			// UNLINK on a busy machine needs the cluster's own.
			o := *st.cl.ClientOptions()
			c := redis.NewClusterClient(&o)
			defer c.Close()
			n, err := cluster.CleanupPrefix(cctx, c, prefix)
			logf("external cluster: deleted %d keys with prefix %s", n, prefix)
			st.note = fmt.Sprintf("external cluster: keys prefixed %s, %d deleted after the run", prefix, n)
			if err != nil {
				cerr = fmt.Errorf("deleting the run's keys (prefix %s) from the external cluster: %w", prefix, err)
				st.note += " (cleanup failed: " + err.Error() + ")"
			}
		})
		return cerr
	}
	return nil
}

// trouble reacts to a failed store call as a gateway should: go-redis re-reads the slot map
// only on MOVED/ASK or every ClusterStateReloadInterval (60 s by default), so after a primary
// dies it would keep calling the dead node; a timeout, connection error or CLUSTERDOWN asks for
// a reload instead (at most every reloadEvery).
func (st *store) trouble(k limiter.ErrorKind) {
	if k != limiter.KindTimeout && k != limiter.KindConn && k != limiter.KindClusterDown {
		return
	}
	now := time.Now().UnixNano()
	last := st.lastReload.Load()
	if now-last < int64(st.reloadEvery) || !st.lastReload.CompareAndSwap(last, now) {
		return
	}
	st.client.ReloadState(context.Background())
}

// fillRow adds the second's MOVED, ASK and NOSCRIPT replies the node hooks saw: the ones go-redis
// followed or the limiter answered with EVAL, and the ones that ended a decision.
func (st *store) fillRow(sec int, iv *results.Interval) {
	if sec < 0 || sec >= len(st.counters.moved) {
		return
	}
	iv.CentralOps = st.counters.central[sec].Load()
	iv.Moved = st.counters.moved[sec].Load()
	iv.Ask = st.counters.ask[sec].Load()
	iv.NoScript = st.counters.noscript[sec].Load()
}

// storeSummary is what only a Redis-backed run knows: the operations per node and in all, the
// MOVED, ASK and NOSCRIPT replies the node hooks counted, and the node of every hot key.
type storeSummary struct {
	nodes   []results.NodeStats
	central results.Central
	// hooked counts the node hooks' replies by kind: redirects followed inside the cluster
	// client and NOSCRIPT answered with EVAL never surface as decision errors.
	hooked  [limiter.NumErrorKinds]int64
	hotKeys []results.HotKey
}

// summary is the store's piece of a run of ran: its counters, and hot (the run's hot keys) with
// the node of each.
func (st *store) summary(ctx context.Context, ran time.Duration, hot []results.HotKey) storeSummary {
	var p storeSummary
	var ops, other int64
	nodes := st.counters.snapshot()
	for _, n := range nodes {
		ops += n.decision.Load()
		other += n.other.Load()
		for k := range n.errs {
			p.hooked[k] += n.errs[k].Load()
		}
	}
	for _, n := range nodes {
		nodeOps := n.decision.Load() + n.other.Load()
		ns := results.NodeStats{Addr: n.addr, Ops: nodeOps, Share: results.Ratio(nodeOps, ops+other)}
		ns.Moved, ns.Ask, ns.NoScript = n.errs[limiter.KindMoved].Load(), n.errs[limiter.KindAsk].Load(), n.errs[limiter.KindNoScript].Load()
		ns.Timeout, ns.Conn = n.errs[limiter.KindTimeout].Load(), n.errs[limiter.KindConn].Load()
		ns.TryAgain, ns.ClusterDown = n.errs[limiter.KindTryAgain].Load(), n.errs[limiter.KindClusterDown].Load()
		p.nodes = append(p.nodes, ns)
	}
	p.central = results.Central{Ops: ops, OtherOps: other}
	if ran > 0 {
		p.central.OpsPerS = float64(ops) / ran.Seconds()
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	p.hotKeys = slices.Clone(hot)
	for i := range p.hotKeys {
		p.hotKeys[i].Node = nodeOf(nctx, st.client, p.hotKeys[i].Key)
	}
	return p
}

// errors is e, the decisions' store failures, with the node hooks' MOVED, ASK and NOSCRIPT
// counts where larger: a MOVED that ended a decision was seen by a hook too, so the hook count
// replaces the decision count rather than adding to it.
func (p storeSummary) errors(e results.Errors) results.Errors {
	e.Moved = max(e.Moved, p.hooked[limiter.KindMoved])
	e.Ask = max(e.Ask, p.hooked[limiter.KindAsk])
	e.NoScript = max(e.NoScript, p.hooked[limiter.KindNoScript])
	return e
}

// nodeOf returns the address of the primary that owns key's slot, or "" if it cannot tell.
func nodeOf(ctx context.Context, c *redis.ClusterClient, key string) string {
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return ""
	}
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return ""
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr
		}
	}
	return ""
}

// preloadScript loads the token-bucket script on every primary before the clock starts, so
// NOSCRIPT counts in the run mean what they say (a flush, a restart or a promoted replica),
// not a cold cache.
func (st *store) preloadScript(ctx context.Context) error {
	err := setupRetry(ctx, func() error {
		return st.client.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.ScriptLoad(ctx, lua.TokenBucket).Err()
		})
	})
	if err != nil {
		return fmt.Errorf("loading the token-bucket script on the primaries: %w", err)
	}
	return nil
}

// setupRetry runs a set-up step (before the clock starts) up to three times: the client's
// socket timeouts are the decision budget, which a busy machine can miss for a SCRIPT LOAD.
// Decisions themselves are never retried.
func setupRetry(ctx context.Context, step func() error) error {
	var err error
	for attempt := range 3 {
		if err = step(); err == nil {
			return nil
		}
		t := time.NewTimer(time.Duration(attempt+1) * 200 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return err
}

// warmPools opens up to workers connections to every node before the clock starts: dialing
// them during the run would put connection set-up into the first second's latency and, with a
// budget of a few milliseconds, turn it into fail-open decisions. Replicas are warmed too, as a
// gateway that expects failovers would: a promoted replica then takes decisions on open
// connections instead of dialing a pool's worth under the decision budget, and the client's
// memory is at its working size from the start (a soak judges growth against it).
func warmPools(ctx context.Context, c *redis.ClusterClient, workers int) {
	_ = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		var wg sync.WaitGroup
		for range min(workers, n.Options().PoolSize) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = n.Ping(ctx).Err()
			}()
		}
		wg.Wait()
		return nil
	})
}

// extraClient is one more limiter client beside the run's (a cut-off gateway's, a region's):
// newClusterClient's settings on opts with hooks added, closed with the session, its pools
// warmed for workers callers.
func (s *Session) extraClient(ctx context.Context, opts *redis.ClusterOptions, workers int, hooks ...redis.Hook) *redis.ClusterClient {
	c := newClusterClient(opts, time.Duration(s.Spec.Limiter.Timeout), workers, s.store.counters)
	for _, h := range hooks {
		c.AddHook(h)
	}
	s.onClose(c.Close)
	warmPools(ctx, c, workers)
	return c
}
