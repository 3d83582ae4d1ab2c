package limiter

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DurabilityMode is what a decision of RedisTokenBucket or CoalescingBucket waits for before it
// counts. Redis replicates asynchronously: the primary answers a script before its replicas
// have its effects, so a failover can promote a replica that lacks the last debits.
type DurabilityMode string

// The durability modes; the strings are those of the scenario spec's limiter.durability.
const (
	// DurabilityAsync (the default, also the zero value ""): the primary's answer. Nothing is
	// sent after the script.
	DurabilityAsync DurabilityMode = "async"
	// DurabilityWait: WAIT replicas timeout after each decision's script call, on the same
	// connection to the same primary. CoalescingBucket sends one WAIT after each EVALSHA of a
	// pipeline.
	DurabilityWait DurabilityMode = "wait"
	// DurabilityWaitPipeline: one WAIT at the end of each pipeline of CoalescingBucket; every
	// decision of the pipeline waits for it. RedisTokenBucket has no pipelines and refuses it.
	DurabilityWaitPipeline DurabilityMode = "wait-pipeline"
)

// Defaults of Durability's zero fields (the spec's limiter.durability_replicas and
// limiter.durability_timeout).
const (
	DefaultDurabilityReplicas = 1
	DefaultDurabilityTimeout  = 50 * time.Millisecond
)

// Durability is what WithDurability sets.
type Durability struct {
	// Mode is async (or ""), wait or wait-pipeline.
	Mode DurabilityMode
	// Replicas is WAIT's numreplicas: how many replicas must acknowledge the debit; 0 means
	// DefaultDurabilityReplicas.
	Replicas int
	// Timeout is WAIT's timeout, rounded up to whole milliseconds; 0 means
	// DefaultDurabilityTimeout. It adds to the decision's deadline (WithTimeout): the script
	// keeps its own budget and the WAIT gets its timeout on top.
	Timeout time.Duration
}

// WithDurability makes RedisTokenBucket and CoalescingBucket wait for replicas after each
// decision (see DurabilityMode); the default, DurabilityAsync, sends nothing more. An allowed
// decision whose WAIT answers fewer than d.Replicas, or fails, returns an error wrapping
// ErrUnreplicated (the debit was made on the primary but is not known replicated), so a fail
// policy decides it: availability for correctness. A denial whose WAIT falls short debited
// nothing: it stands, with Decision.Unreplicated set.
//
// In the wait modes the script and its WAIT go in one pipeline to the primary that owns the key
// (ClusterClient.MasterForKey), because WAIT names no key: a cluster client's pipeline would
// send it to a node of its own choosing, not to the connection that ran the script. These
// commands therefore pass the hooks of the node clients (ClusterClient.OnNewNode) but not the
// hooks added to the ClusterClient itself. A MOVED reply is returned, not followed (the
// limiter asks the client to re-read its slot map, so the next decision goes to the new
// owner); NOSCRIPT still falls back to EVAL, followed by its own WAIT.
//
// The other limiters ignore this option.
func WithDurability(d Durability) Option { return func(c *config) { c.durability = d } }

// waiter is a checked Durability in a wait mode: what the buckets send after their scripts.
type waiter struct {
	mode     DurabilityMode // DurabilityWait or DurabilityWaitPipeline
	replicas int64
	timeout  time.Duration // whole milliseconds
}

// waiter checks d and returns its waiter, nil for async. pipelines says whether the bucket
// sends pipelines (wait-pipeline needs them).
func (d Durability) waiter(pipelines bool) (*waiter, error) {
	switch d.Mode {
	case "", DurabilityAsync:
		return nil, nil
	case DurabilityWait:
	case DurabilityWaitPipeline:
		if !pipelines {
			return nil, fmt.Errorf("%w: durability mode %q: RedisTokenBucket sends no pipelines; use %q, or CoalescingBucket for one WAIT per pipeline",
				ErrBadConfig, d.Mode, DurabilityWait)
		}
	default:
		return nil, fmt.Errorf("%w: durability mode %q: must be %q, %q or %q",
			ErrBadConfig, d.Mode, DurabilityAsync, DurabilityWait, DurabilityWaitPipeline)
	}
	w := &waiter{mode: d.Mode, replicas: int64(d.Replicas), timeout: d.Timeout}
	switch {
	case d.Replicas < 0:
		return nil, fmt.Errorf("%w: durability replicas %d: must be >= 1 (0 means %d)", ErrBadConfig, d.Replicas, DefaultDurabilityReplicas)
	case d.Replicas == 0:
		w.replicas = DefaultDurabilityReplicas
	}
	switch {
	case d.Timeout < 0:
		return nil, fmt.Errorf("%w: durability timeout %v: must be > 0 (WAIT 0 blocks for ever; 0 means %v)", ErrBadConfig, d.Timeout, DefaultDurabilityTimeout)
	case d.Timeout == 0:
		w.timeout = DefaultDurabilityTimeout
	default:
		w.timeout = (d.Timeout + time.Millisecond - 1).Truncate(time.Millisecond)
	}
	return w, nil
}

// extend is the decision deadline of a bucket with this waiter: the script's timeout plus the
// WAIT's (0 stays 0: the caller's context only).
func (w *waiter) extend(timeout time.Duration) time.Duration {
	if w == nil || timeout == 0 {
		return timeout
	}
	return timeout + w.timeout
}

// wait queues one WAIT on pipe.
func (w *waiter) wait(ctx context.Context, pipe redis.Pipeliner) *redis.IntCmd {
	cmd := redis.NewIntCmd(ctx, "wait", w.replicas, w.timeout.Milliseconds())
	_ = pipe.Process(ctx, cmd)
	return cmd
}

// replicated reports whether the WAIT after a successful script answered at least the
// replicas asked for; a failed WAIT did not.
func (w *waiter) replicated(wait *redis.IntCmd) bool {
	n, err := wait.Result()
	return err == nil && n >= w.replicas
}

// primaries finds the node client a key's script and its WAIT go to: the cluster client's
// primary for the key's slot, or the client itself when it is one node's *redis.Client.
type primaries struct {
	resolver masterResolver // nil: single
	single   *redis.Client
	reloader interface{ ReloadState(context.Context) } // nil: none
}

// newPrimaries returns the primaries of c, or ErrBadConfig when c is neither a client with
// MasterForKey (a *redis.ClusterClient) nor a *redis.Client.
func newPrimaries(c any) (primaries, error) {
	var p primaries
	if r, ok := c.(masterResolver); ok {
		p.resolver = r
	} else if s, ok := c.(*redis.Client); ok {
		p.single = s
	} else {
		return p, fmt.Errorf("%w: durability wait needs a *redis.ClusterClient or *redis.Client (WAIT must follow the script on its connection), got %T", ErrBadConfig, c)
	}
	p.reloader, _ = c.(interface{ ReloadState(context.Context) })
	return p, nil
}

// node returns the client of key's primary.
func (p primaries) node(ctx context.Context, key string) (*redis.Client, error) {
	if p.resolver == nil {
		return p.single, nil
	}
	return p.resolver.MasterForKey(ctx, key)
}

// redirected asks the cluster client to re-read its slot map when a node answered MOVED or ASK:
// a node pipeline does not follow redirections, and go-redis learns of them only from its own.
func (p primaries) redirected(ctx context.Context, err error) {
	if p.reloader == nil || err == nil {
		return
	}
	if k := ClassifyError(err); k == KindMoved || k == KindAsk {
		p.reloader.ReloadState(ctx)
	}
}

// evalWait runs the script on keys with args and its WAIT in one pipeline to the primary of
// keys[0], with the NOSCRIPT->EVAL fallback (and its own WAIT), and returns the script's reply
// and whether its WAIT answered enough replicas, or the script's error.
func (b *RedisTokenBucket) evalWait(ctx context.Context, keys []string, args []any) (any, bool, error) {
	node, err := b.nodes.node(ctx, keys[0])
	if err != nil {
		return nil, false, err
	}
	run := func(eval bool) (*redis.Cmd, *redis.IntCmd) {
		pipe := node.Pipeline()
		var cmd *redis.Cmd
		if eval {
			cmd = pipe.Eval(ctx, b.src, keys, args...)
		} else {
			cmd = pipe.EvalSha(ctx, b.sha, keys, args...)
		}
		wait := b.wait.wait(ctx, pipe)
		_, _ = pipe.Exec(ctx)
		return cmd, wait
	}
	cmd, wait := run(false)
	if err := cmd.Err(); err != nil && ClassifyError(err) == KindNoScript {
		b.noScriptFallback()
		cmd, wait = run(true)
	}
	if err := cmd.Err(); err != nil {
		b.nodes.redirected(ctx, err)
		return nil, false, err
	}
	return cmd.Val(), b.wait.replicated(wait), nil
}

// allowSlow is Allow with WithDurability or WithAudit: the audit key as KEYS[2], and in the wait
// modes the script and its WAIT in one pipeline to the key's primary.
func (b *RedisTokenBucket) allowSlow(ctx context.Context, r Request) (Decision, error) {
	argv, at, err := bucketArgs(r, b.policy, &b.args, b.policyFor)
	if err != nil {
		return Decision{}, err
	}
	if b.audit {
		if err := checkAuditable(r); err != nil {
			return Decision{}, err
		}
	}
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	keys := make([]string, 1, 2)
	keys[0] = KeyFor(r.Tenant, r.Endpoint)
	if b.audit {
		keys = append(keys, AuditKey(r.Tenant, r.Endpoint, b.auditRun))
	}
	args := argv[:b.nargs]
	var reply any
	replicated := true
	if b.wait != nil {
		reply, replicated, err = b.evalWait(ctx, keys, args)
	} else {
		reply, err = b.c.EvalSha(ctx, b.sha, keys, args...).Result()
		if err != nil && ClassifyError(err) == KindNoScript {
			b.noScriptFallback()
			reply, err = b.c.Eval(ctx, b.src, keys, args...).Result()
		}
	}
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: token bucket %s: %w", keys[0], err)
	}
	d, err := decodeBucketReply(reply, b.nargs, at)
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: token bucket %s: %w", keys[0], err)
	}
	d.Source = Central
	return d, unreplicated(&d, replicated, keys[0], b.wait)
}

// unreplicated is the outcome of a decision d whose WAIT did or did not answer enough
// replicas: nil when it did; an ErrUnreplicated error when d allowed (the store does not vouch
// for a debit that may be lost); nil with d.Unreplicated set for a denial, which debited
// nothing and stands.
func unreplicated(d *Decision, replicated bool, key string, w *waiter) error {
	switch {
	case replicated:
		return nil
	case d.Allowed:
		return fmt.Errorf("limiter: token bucket %s: %w: WAIT %d %d fell short", key, ErrUnreplicated, w.replicas, w.timeout.Milliseconds())
	}
	d.Unreplicated = true
	return nil
}

// noScriptFallback counts one NOSCRIPT->EVAL step and tells WithOnNoScript's function.
func (b *RedisTokenBucket) noScriptFallback() {
	b.noScript.Add(1)
	if b.onNoScript != nil {
		b.onNoScript()
	}
}

// execWait sends the calls' commands in one pipeline to node (the client itself when there is
// one queue) with WAIT after each command (wait) or once at the end (wait-pipeline), and marks
// each successful command whose WAIT fell short as unreplicated. A node pipeline
// does not follow MOVED or ASK: those errors stay in their commands, and the cluster client is
// told to re-read its slot map.
func (b *scriptBatcher) execWait(ctx context.Context, node *redis.Client, calls []*batchCall) {
	var pipe redis.Pipeliner
	if node != nil {
		pipe = node.Pipeline()
	} else {
		pipe = b.c.Pipeline() // one queue: b.c is a *redis.Client (newPrimaries checked it)
	}
	perCall := b.wait.mode == DurabilityWait
	waits := make([]*redis.IntCmd, 0, len(calls))
	for _, c := range calls {
		_ = pipe.Process(ctx, c.cmd)
		if perCall {
			waits = append(waits, b.wait.wait(ctx, pipe))
		}
	}
	if !perCall {
		waits = append(waits, b.wait.wait(ctx, pipe))
	}
	_, _ = pipe.Exec(ctx)
	b.batches.Add(1)
	b.sent.Add(int64(len(calls)))
	var redirect error
	for i, c := range calls {
		if err := c.cmd.Err(); err != nil {
			if k := ClassifyError(err); k == KindMoved || k == KindAsk {
				redirect = err
			}
			continue
		}
		w := waits[0]
		if perCall {
			w = waits[i]
		}
		c.unreplicated = !b.wait.replicated(w)
	}
	b.nodes.redirected(ctx, redirect)
}
