package engine

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// tagKey carries a decision's second (a *reqTag) from the worker through go-redis to the per-node
// hooks, so redirects are attributed to the second of the request that suffered them.
type tagKey struct{}

// reqTag is owned by one worker and rewritten before each decision. Hooks run in the caller's
// goroutine for plain commands, but a coalesced pipeline carries the context of one of its
// requests into the batcher's goroutine, which reads the tag while the worker has moved on, and
// so does the fetch of a request the lease limiter parked: sec is atomic, and such a redirect
// counts in the second that worker is deciding by then (at most a decision timeout later).
type reqTag struct{ sec atomic.Int64 }

// nodeStats counts what one node's client saw.
type nodeStats struct {
	addr     string
	decision atomic.Int64                        // commands that made or refilled a decision (limiter.IsDecisionCommand)
	other    atomic.Int64                        // every other command: PING, SCRIPT LOAD, CLUSTER SLOTS, ASKING...
	errs     [limiter.NumErrorKinds]atomic.Int64 // replies and failures by kind, MOVED/ASK/NOSCRIPT included
}

// nodeCounters count every node's commands and error replies, and MOVED, ASK and NOSCRIPT per
// second of the run. go-redis follows redirects inside the ClusterClient and the limiter answers
// NOSCRIPT with EVAL, so neither reaches the caller as an error; hooks on the per-node clients
// (OnNewNode) see both (a hook on the cluster client would not see redirects).
type nodeCounters struct {
	mu                   sync.Mutex
	nodes                map[string]*nodeStats
	moved, ask, noscript []atomic.Int64 // per second of the run, of the request that met them
	// central counts decision commands per second of the run in which they were answered: a
	// lease's refresh-ahead fetch belongs to no request, so the wall clock places it.
	central []atomic.Int64
	baseNs  atomic.Int64 // the run's time zero (UnixNano); 0 before it starts
}

func newNodeCounters(seconds int) *nodeCounters {
	return &nodeCounters{
		nodes:    map[string]*nodeStats{},
		moved:    make([]atomic.Int64, seconds),
		central:  make([]atomic.Int64, seconds),
		ask:      make([]atomic.Int64, seconds),
		noscript: make([]atomic.Int64, seconds),
	}
}

func (r *nodeCounters) node(addr string) *nodeStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.nodes[addr]
	if n == nil {
		n = &nodeStats{addr: addr}
		r.nodes[addr] = n
	}
	return n
}

// snapshot returns the per-node counters sorted by address.
func (r *nodeCounters) snapshot() []*nodeStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*nodeStats, 0, len(r.nodes))
	for _, n := range r.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// nodeHook is installed on every per-node client.
type nodeHook struct {
	r *nodeCounters
	n *nodeStats
}

func (h nodeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.op(cmd, time.Now().UnixNano())
		h.count(ctx, err)
		return err
	}
}

// op books one command the node answered at tNs: a decision command in the second of the run
// it was answered in, any other command apart.
func (h nodeHook) op(cmd redis.Cmder, tNs int64) {
	if !limiter.IsDecisionCommand(cmd) {
		h.n.other.Add(1)
		return
	}
	h.n.decision.Add(1)
	if base := h.r.baseNs.Load(); base > 0 && tNs >= base {
		if sec := int((tNs - base) / int64(time.Second)); sec < len(h.r.central) {
			h.r.central[sec].Add(1)
		}
	}
}

// count books one command's error on the node and, for MOVED, ASK and NOSCRIPT, in the second
// of the request that ctx carries.
func (h nodeHook) count(ctx context.Context, err error) {
	if err == nil {
		return
	}
	kind := limiter.ClassifyError(err)
	h.n.errs[kind].Add(1)
	var perSec []atomic.Int64
	switch kind {
	case limiter.KindMoved:
		perSec = h.r.moved
	case limiter.KindAsk:
		perSec = h.r.ask
	case limiter.KindNoScript:
		perSec = h.r.noscript
	default:
		return
	}
	if t, ok := ctx.Value(tagKey{}).(*reqTag); ok {
		if sec := int(t.sec.Load()); sec >= 0 && sec < len(perSec) {
			perSec[sec].Add(1)
		}
	}
}

func (h nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		now := time.Now().UnixNano()
		// A pipeline (the coalescing transport, batched lease fetches) answers per command: a
		// MOVED or ASK here is one the cluster client then follows, and must count as one.
		// Its context is the batch's, which carries the second of one of its requests.
		for _, c := range cmds {
			h.op(c, now)
			h.count(ctx, c.Err())
		}
		return err
	}
}

// Connection buffer sizes of the limiter's client (see newClusterClient).
const (
	clientBufferSize   = 8 << 10
	pipelineBufferSize = 32 << 10
)

// newClusterClient builds the client the limiter uses, with the settings an outage needs:
// no hidden retries (MaxRetries -1 and one dial attempt: go-redis would otherwise retry and
// multiply latency during an outage), context deadlines honoured (ContextTimeoutEnabled), short socket timeouts, a pool large
// enough for the workers, and redirect-counting hooks on every node client.
//
// base comes from the provider (cluster.Cluster.ClientOptions): addresses and, where the
// provider has them, user, password and TLS; everything else is set here.
func newClusterClient(base *redis.ClusterOptions, timeout time.Duration, workers int, r *nodeCounters) *redis.ClusterClient {
	perNode := max(workers, 10)
	o := *base
	o.MaxRetries = -1
	o.MaxRedirects = 3
	o.ContextTimeoutEnabled = true
	o.DialTimeout = time.Second
	// go-redis re-dials several times, 100 ms apart, by default, even with MaxRetries -1: a
	// dead node would show up as a stall and a timeout instead of a connection error.
	o.DialerRetries = 1
	o.ReadTimeout = max(timeout, 10*time.Millisecond)
	o.WriteTimeout = max(timeout, 10*time.Millisecond)
	o.PoolSize = perNode
	o.MinIdleConns = 0
	o.PoolTimeout = timeout
	// go-redis's default buffers (32 KiB per connection, 128 KiB per pipeline connection) are
	// far larger than an EVALSHA (about 150 bytes, reply about 40) or a pipeline of 64 of them
	// (about 10 KB out, 3 KB back; longer replies still parse: go-redis reads past a full
	// buffer). With a pool per node they dominate the heap, and RSS creeps up for as long as
	// traffic keeps touching their pages for the first time, which a soak reads as a leak.
	o.ReadBufferSize, o.WriteBufferSize = clientBufferSize, clientBufferSize
	o.PipelineReadBufferSize, o.PipelineWriteBufferSize = pipelineBufferSize, pipelineBufferSize
	c := redis.NewClusterClient(&o)
	// go-redis logs every failed dial; during a fault that is thousands of lines on stderr. The
	// run counts them instead (errors.conn, errors.timeout).
	quietOnce.Do(func() { redis.SetLogger(quietLogger{}) })
	c.OnNewNode(func(n *redis.Client) {
		n.AddHook(nodeHook{r: r, n: r.node(n.Options().Addr)})
	})
	return c
}

// quietOnce installs quietLogger once: go-redis's logger is process-wide.
var quietOnce sync.Once

// quietLogger drops go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}
