package limiter

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptBatcher sends script calls (EVALSHA with one key) in pipelines, one queue per primary.
// It is the transport of CoalescingBucket and of LeaseLimiter's fetches.
//
// A queue has at most flushers goroutines sending for it. They are started by enqueue when a
// call arrives and fewer are running, and exit when the queue is empty, so an idle batcher holds
// no goroutine and needs no Close to avoid a leak. While a node's pipelines are on the wire new
// calls queue up and leave together in the next one: batching comes from load, not from waiting.
type scriptBatcher struct {
	c          PipelineScripter
	resolver   masterResolver // nil: one queue
	batchSize  int
	window     time.Duration
	linger     time.Duration // see WithBatchLinger
	flushers   int
	onNoScript func()    // called per command that met NOSCRIPT, from the flushing goroutine
	wait       *waiter   // nil: async (WithDurability)
	nodes      primaries // with wait: the single node, the slot-map reloader

	mu     sync.Mutex                   // guards queue creation and closed
	queues atomic.Pointer[[]queueEntry] // copy-on-write: read without a lock on every call
	closed bool
	stop   chan struct{}  // closed by close: flushers stop waiting out their window
	wg     sync.WaitGroup // running flushers

	batches, sent, noScript atomic.Int64
}

// queueEntry maps one primary's client to its queue. With a handful of primaries a linear scan
// is faster than a map and needs no lock.
type queueEntry struct {
	node *redis.Client
	q    *nodeQueue
}

func newScriptBatcher(c PipelineScripter, cc coalesceConfig, onNoScript func()) *scriptBatcher {
	b := &scriptBatcher{c: c, batchSize: cc.batchSize, window: cc.window, linger: cc.linger, flushers: cc.flushers, onNoScript: onNoScript,
		stop: make(chan struct{})}
	if r, ok := c.(masterResolver); ok {
		b.resolver = r
	}
	b.queues.Store(&[]queueEntry{})
	return b
}

// batchCall is one script call waiting in a queue. cmd is complete before it is queued; the
// flusher replaces it (NOSCRIPT->EVAL) and signals done once (it holds one token, so the
// flusher never blocks); the caller reads cmd only after done. A caller that received done
// owns the call again and returns it to calls for reuse; an abandoned call is left to the GC,
// because its flusher may still hold it.
type batchCall struct {
	ctx       context.Context // the caller's, for its cancellation
	deadline  time.Time       // the call's own deadline; zero: none
	cmd       *redis.Cmd
	src       string // the script, for EVAL after NOSCRIPT
	done      chan struct{}
	abandoned atomic.Bool // the caller's deadline passed: do not send it
	args      []any       // cmd's arguments, reused with the call
	// unreplicated: the script succeeded but its WAIT (WithDurability) fell short; set by the
	// flusher before done.
	unreplicated bool
}

// calls recycles batchCalls with their done channel and argument slice: three allocations of
// each coalesced decision, and the garbage the collector would sweep.
var calls = sync.Pool{New: func() any { return &batchCall{done: make(chan struct{}, 1)} }}

// timers are reused by waiting callers: a per-call context.WithTimeout would cost every
// coalesced decision a context, a timer and a cancel func.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// run sends EVALSHA sha with KEYS[1] = key (and KEYS[2] = key2 unless it is empty) and args as
// ARGV in the next pipeline to key's primary and returns the reply, and whether a WAIT after
// it (WithDurability) fell short of its replicas. The call's deadline is ctx's
// or timeout from now, whichever is earlier (timeout 0: ctx's only). An error is the command's (Redis or connection),
// context.DeadlineExceeded when the deadline passes first, ctx's error when it is cancelled, or
// redis.ErrClosed after close.
func (b *scriptBatcher) run(ctx context.Context, timeout time.Duration, sha, src, key, key2 string, args []any) (any, bool, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if dl, ok := ctx.Deadline(); ok && (deadline.IsZero() || dl.Before(deadline)) {
		deadline = dl
	}
	q, err := b.queueFor(ctx, key)
	if err != nil {
		return nil, false, err
	}
	call := calls.Get().(*batchCall)
	call.unreplicated = false
	if key2 == "" {
		call.args = append(append(call.args[:0], "evalsha", sha, 1, key), args...)
	} else {
		call.args = append(append(call.args[:0], "evalsha", sha, 2, key, key2), args...)
	}
	call.ctx, call.deadline, call.src = ctx, deadline, src
	call.cmd = redis.NewCmd(ctx, call.args...)
	call.cmd.SetFirstKeyPos(3)
	if !q.enqueue(call) {
		return nil, false, redis.ErrClosed
	}
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := timers.Get().(*time.Timer)
		t.Reset(time.Until(deadline))
		defer func() {
			t.Stop() // Go's timers (1.23 on) leave no stale tick in t.C after Stop
			timers.Put(t)
		}()
		expired = t.C
	}
	select {
	case <-call.done:
		reply, err := call.cmd.Result()
		unreplicated := call.unreplicated
		// The reply is decoded from the command's own buffers, not from args: the call may go.
		clear(call.args)
		call.ctx, call.cmd, call.src = nil, nil, ""
		calls.Put(call)
		return reply, unreplicated, err
	case <-expired:
		call.abandoned.Store(true)
		return nil, false, context.DeadlineExceeded
	case <-ctx.Done():
		call.abandoned.Store(true)
		return nil, false, ctx.Err()
	}
}

// close refuses new calls and waits for the flushers to send what is queued.
func (b *scriptBatcher) close() {
	b.mu.Lock()
	if !b.closed {
		close(b.stop)
	}
	b.closed = true
	for _, e := range *b.queues.Load() {
		e.q.mu.Lock()
		e.q.closed = true
		e.q.mu.Unlock()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// queueFor returns the queue of key's primary (from the client's slot map, so a resharded slot
// moves to its new owner's queue), creating it on first use.
func (b *scriptBatcher) queueFor(ctx context.Context, key string) (*nodeQueue, error) {
	var node *redis.Client
	if b.resolver != nil {
		n, err := b.resolver.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		node = n
	}
	for _, e := range *b.queues.Load() {
		if e.node == node {
			return e.q, nil
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := *b.queues.Load()
	for _, e := range cur {
		if e.node == node {
			return e.q, nil
		}
	}
	if b.closed {
		return nil, redis.ErrClosed
	}
	q := &nodeQueue{b: b, node: node, full: make(chan struct{}, 1)}
	next := append(append(make([]queueEntry, 0, len(cur)+1), cur...), queueEntry{node: node, q: q})
	b.queues.Store(&next)
	return q, nil
}

// nodeQueue is one primary's queue of calls.
type nodeQueue struct {
	b      *scriptBatcher
	node   *redis.Client // the primary; nil with one queue
	mu     sync.Mutex
	calls  []*batchCall
	active int  // flushers running
	closed bool // refuse new calls
	// full tells a flusher waiting out its window that a batch is full. It holds one token, so
	// signalling never blocks; a stale token only flushes early.
	full chan struct{}
}

// enqueue adds c, starting a flusher if fewer than flushers run. It reports false once closed.
func (q *nodeQueue) enqueue(c *batchCall) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.calls = append(q.calls, c)
	n := len(q.calls)
	start := q.active < q.b.flushers
	if start {
		q.active++
		q.b.wg.Add(1)
	}
	q.mu.Unlock()
	if start {
		go q.flush()
	} else if n >= q.b.batchSize {
		select {
		case q.full <- struct{}{}:
		default:
		}
	}
	return true
}

// flush sends batches of up to batchSize until the queue is empty. The exit decision is made
// under the lock that enqueue takes, so a call is never left without a flusher.
func (q *nodeQueue) flush() {
	defer q.b.wg.Done()
	var buf []*batchCall
	for {
		if q.b.window > 0 || q.b.linger > 0 {
			// Wait out the window for a short batch; or, with a linger, while another of the
			// node's flushers has a pipeline going (an idle node's only call never waits).
			q.mu.Lock()
			short := len(q.calls) < q.b.batchSize
			w := q.b.window
			if w == 0 && q.active > 1 {
				w = q.b.linger
			}
			q.mu.Unlock()
			if short && w > 0 {
				t := time.NewTimer(w)
				select {
				case <-t.C:
				case <-q.full:
					t.Stop()
				case <-q.b.stop:
					t.Stop()
				}
			}
		}
		q.mu.Lock()
		n := min(len(q.calls), q.b.batchSize)
		if n == 0 {
			q.active--
			q.mu.Unlock()
			return
		}
		buf = append(buf[:0], q.calls[:n]...)
		rest := copy(q.calls, q.calls[n:])
		clear(q.calls[rest:])
		q.calls = q.calls[:rest]
		q.mu.Unlock()
		q.b.send(q.node, buf)
		clear(buf)
	}
}

// send runs one batch as a pipeline (to node, its primary, in the wait modes), then its NOSCRIPT
// commands as EVAL in a second one, and hands every reply back. Calls whose caller gave up are
// not sent.
func (b *scriptBatcher) send(node *redis.Client, batch []*batchCall) {
	live := batch[:0]
	var latest time.Time
	noDeadline := false
	now := time.Now()
	for _, c := range batch {
		if c.abandoned.Load() || c.ctx.Err() != nil || (!c.deadline.IsZero() && !now.Before(c.deadline)) {
			// Not sent. The caller may see done before its own deadline fires (select picks
			// either), so the command must carry the reason, never an empty reply.
			err := c.ctx.Err()
			if err == nil {
				err = context.DeadlineExceeded
			}
			c.cmd.SetErr(err)
			c.done <- struct{}{}
			continue
		}
		if c.deadline.IsZero() {
			noDeadline = true
		} else if c.deadline.After(latest) {
			latest = c.deadline
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	// The batch runs under the latest deadline of its calls; each caller still returns at its
	// own (run's select). It carries the values of its first call's context, not its
	// cancellation, so that hooks on the clients can attribute the pipeline to a request.
	ctx := context.WithoutCancel(live[0].ctx)
	if !noDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, latest)
		defer cancel()
	}
	b.exec(ctx, node, live)

	var retry []*batchCall
	for _, c := range live {
		if err := c.cmd.Err(); err != nil && ClassifyError(err) == KindNoScript {
			retry = append(retry, c)
		}
	}
	if len(retry) > 0 {
		// The node lost its script cache (restart, flush, promoted replica): EVAL runs the
		// script and caches it there. One retry per command, as in RedisTokenBucket.
		b.noScript.Add(int64(len(retry)))
		for _, c := range retry {
			if b.onNoScript != nil {
				b.onNoScript()
			}
			args := append([]any(nil), c.cmd.Args()...)
			args[0], args[1] = "eval", c.src
			c.cmd = redis.NewCmd(c.ctx, args...)
			c.cmd.SetFirstKeyPos(3)
		}
		b.exec(ctx, node, retry)
	}
	for _, c := range live {
		c.done <- struct{}{}
	}
}

// exec sends the calls' commands in one pipeline of the client, which routes them by slot and
// follows MOVED/ASK per command; with WithDurability's wait modes, in one pipeline to node with
// its WAITs (execWait). Errors land in the commands.
func (b *scriptBatcher) exec(ctx context.Context, node *redis.Client, calls []*batchCall) {
	if b.wait != nil {
		b.execWait(ctx, node, calls)
		return
	}
	pipe := b.c.Pipeline()
	for _, c := range calls {
		_ = pipe.Process(ctx, c.cmd)
	}
	_, _ = pipe.Exec(ctx)
	b.batches.Add(1)
	b.sent.Add(int64(len(calls)))
}
