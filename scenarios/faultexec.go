package scenarios

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/results"
	"ratelab/scenarios/cluster"
)

// healthyWait bounds how long a fault's cause stays attached to decisions while the cluster heals.
const healthyWait = 30 * time.Second

// causeGrace keeps a fault's cause on decisions for a moment after the cluster reports healthy:
// clients learn the new slot map a little later than the nodes agree on it.
const causeGrace = time.Second

// faultRunner injects a scenario's faults into a local cluster on schedule and records each as an
// event. While a fault is active its cause (failover, pause, latency, ...) is attached to central
// decisions so their overspend is attributed to it.
type faultRunner struct {
	cl     cluster.Cluster
	specs  []FaultSpec
	nodes  []cluster.Node // as started: node:N indexes this
	hotKey string         // a key of the hottest tenant
	keyOf  func(tenant string) string
	logf   func(string, ...any)
	base   time.Time

	causeFor func(string) Cause
	// onInject hears of each fault as it starts (seconds since the start of the run).
	onInject func(atS float64)
	// slotTraffic returns decisions so far per slot (for reshard); nil means no preference.
	slotTraffic func() map[int]int64
	// skew is the driver's per-gateway clock offset (ns), set by clock-skew faults; nil without.
	skew []atomic.Int64
	// gateways is the number of simulated gateways; dropGateway kills gateway i (its leases are
	// lost, it goes on empty) and returns the tokens lost; nil when gateways hold no state.
	gateways    int
	dropGateway func(i int) int64
	active      atomic.Int32 // number of faults whose cause is current
	cause       atomic.Int32 // the newest active fault's Cause

	mu     sync.Mutex
	killed string // the node the last kill-primary took down
	events []results.Fault
	bound  float64 // tokens the faults may return (replication gap at kills), summed
	wg     sync.WaitGroup
}

func newFaultRunner(cl cluster.Cluster, specs []FaultSpec, hotKey string, keyOf func(string) string, causeFor func(string) Cause, logf func(string, ...any)) *faultRunner {
	r := &faultRunner{cl: cl, specs: append([]FaultSpec(nil), specs...), hotKey: hotKey, keyOf: keyOf, causeFor: causeFor, logf: logf}
	if cl != nil {
		// Gateway faults run without a cluster (limiter.kind memory).
		r.nodes = cl.Nodes()
	}
	sort.SliceStable(r.specs, func(i, j int) bool { return r.specs[i].At < r.specs[j].At })
	return r
}

// currentCause is the cause to attach to a central decision now; ok is false when no fault is
// active. Two atomic loads: cheap enough for every decision.
func (r *faultRunner) currentCause() (Cause, bool) {
	if r == nil || r.active.Load() == 0 {
		return 0, false
	}
	return Cause(r.cause.Load()), true
}

// run injects every fault at base + At until ctx ends; each fault runs in its own goroutine so a
// long pause does not delay the next fault. wait() waits for them.
func (r *faultRunner) run(ctx context.Context, base time.Time) {
	r.base = base
	for _, f := range r.specs {
		wait := time.Until(base.Add(time.Duration(f.At)))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.inject(ctx, f)
		}()
	}
}

func (r *faultRunner) wait() { r.wg.Wait() }

// inject executes one fault and records its event.
func (r *faultRunner) inject(ctx context.Context, f FaultSpec) {
	at := time.Since(r.base).Seconds()
	if gatewayFault(f.Kind) {
		r.injectGateway(ctx, f, at)
		return
	}
	targets, desc, err := r.resolve(f)
	if f.Kind == FaultReshard {
		desc = fmt.Sprintf("%d slots %s -> %s", f.Slots, f.From, f.To)
	}
	ev := results.Fault{AtS: at, Kind: f.Kind, Target: desc, ForS: time.Duration(f.For).Seconds()}
	if r.onInject != nil {
		r.onInject(at)
	}
	if err == nil {
		r.logf("fault at %.1fs: %s %s", at, f.Kind, desc)
		err = r.execute(ctx, f, targets)
	}
	if err != nil {
		ev.Target = fmt.Sprintf("%s (failed: %v)", desc, err)
		r.logf("fault %s at %.1fs failed: %v", f.Kind, at, err)
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// resolve turns a target into node addresses and a readable description.
func (r *faultRunner) resolve(f FaultSpec) ([]string, string, error) {
	t := f.Target
	if t == "" {
		t = "hottest"
	}
	primaryOfKey := func(key string) ([]string, string, error) {
		slot := cluster.KeySlot(key)
		n, err := r.cl.PrimaryFor(slot)
		if err != nil {
			return nil, t, err
		}
		return []string{n.Addr}, fmt.Sprintf("%s = %s (primary of slot %d)", t, n.Addr, slot), nil
	}
	switch {
	case t == "hottest":
		return primaryOfKey(r.hotKey)
	case t == "killed":
		r.mu.Lock()
		k := r.killed
		r.mu.Unlock()
		if k == "" {
			return nil, t, fmt.Errorf("target killed: no kill-primary ran before this fault")
		}
		return []string{k}, "killed = " + k, nil
	case t == "all":
		var addrs []string
		nodes := r.cl.Nodes()
		// Local and docker nodes carry a pid, 0 while a node is down; an external cluster's
		// never do, so without any pid every node counts as up.
		pids := false
		for _, n := range nodes {
			pids = pids || n.Pid != 0
		}
		for _, n := range nodes {
			if (n.Pid != 0 || !pids) && (f.Kind != FaultScriptFlush || n.Role == cluster.RolePrimary) {
				addrs = append(addrs, n.Addr)
			}
		}
		return addrs, fmt.Sprintf("all (%d nodes)", len(addrs)), nil
	case strings.HasPrefix(t, "node:"):
		i, _ := strconv.Atoi(strings.TrimPrefix(t, "node:"))
		if i < 0 || i >= len(r.nodes) {
			return nil, t, fmt.Errorf("%s: the cluster has %d nodes", t, len(r.nodes))
		}
		return []string{r.nodes[i].Addr}, fmt.Sprintf("%s = %s", t, r.nodes[i].Addr), nil
	case strings.HasPrefix(t, "slot:"):
		slot, _ := strconv.Atoi(strings.TrimPrefix(t, "slot:"))
		n, err := r.cl.PrimaryFor(slot)
		if err != nil {
			return nil, t, err
		}
		return []string{n.Addr}, fmt.Sprintf("%s = %s", t, n.Addr), nil
	case strings.HasPrefix(t, "primary-of:"):
		return primaryOfKey(r.keyOf(strings.TrimPrefix(t, "primary-of:")))
	}
	return nil, t, fmt.Errorf("unknown target %q", t)
}

// execute performs the fault on its targets, holding its cause while it lasts.
func (r *faultRunner) execute(ctx context.Context, f FaultSpec, targets []string) error {
	switch f.Kind {
	case FaultKillPrimary:
		addr := targets[0]
		if err := r.requirePrimary(addr); err != nil {
			return err
		}
		r.noteReplicationGap(ctx, addr)
		defer r.holdUntilHealthy(ctx, "failover")()
		r.mu.Lock()
		r.killed = addr
		r.mu.Unlock()
		return r.cl.Kill(addr)
	case FaultFailover:
		addr := targets[0]
		if err := r.requirePrimary(addr); err != nil {
			return err
		}
		reps := r.cl.ReplicasOf(addr)
		if len(reps) == 0 {
			return fmt.Errorf("%s has no replica to fail over to", addr)
		}
		r.noteReplicationGap(ctx, addr)
		defer r.holdUntilHealthy(ctx, "failover")()
		return r.clusterFailover(ctx, reps[0].Addr, f.Mode)
	case FaultPause:
		defer r.hold("pause")()
		for _, a := range targets {
			if err := r.cl.Pause(a); err != nil {
				return err
			}
		}
		sleepCtx(ctx, time.Duration(f.For))
		var first error
		for _, a := range targets {
			if err := r.cl.Resume(a); err != nil && first == nil {
				first = err
			}
		}
		return first
	case FaultLatency:
		defer r.hold("latency")()
		for _, a := range targets {
			if err := r.cl.SetLatency(a, time.Duration(f.Delay), time.Duration(f.Jitter)); err != nil {
				return err
			}
		}
		d := time.Duration(f.For)
		if d == 0 {
			<-ctx.Done()
		} else {
			sleepCtx(ctx, d)
		}
		var first error
		for _, a := range targets {
			if err := r.cl.SetLatency(a, 0, 0); err != nil && first == nil {
				first = err
			}
		}
		return first
	case FaultReshard:
		from, err := r.nodeAddr(f.From)
		if err != nil {
			return err
		}
		to, err := r.nodeAddr(f.To)
		if err != nil {
			return err
		}
		defer r.hold("reshard")()
		slots, err := r.busiestSlots(from, f.Slots)
		if err != nil {
			return err
		}
		window := time.Duration(f.AskWindow)
		if window == 0 {
			window = DefaultAskWindow
		}
		for _, sl := range slots {
			if _, err := r.cl.MigrateSlots(ctx, 1, from, to, cluster.WithSlotRange(cluster.SlotRange{Start: sl, End: sl}),
				cluster.WithSlotPause(reshardSlotPause), cluster.WithAskWindow(window)); err != nil {
				return err
			}
		}
		return nil
	case FaultScriptFlush:
		defer r.hold("noscript")()
		for _, a := range targets {
			c := r.nodeClient(a)
			err := c.ScriptFlush(ctx).Err()
			c.Close()
			if err != nil {
				return fmt.Errorf("SCRIPT FLUSH on %s: %w", a, err)
			}
		}
		return nil
	case FaultRestart:
		defer r.holdUntilHealthy(ctx, "restart")()
		return r.cl.Restart(ctx, targets[0])
	}
	return fmt.Errorf("unknown fault kind %q", f.Kind)
}

// reshardSlotPause spaces slot migrations; DefaultAskWindow (a reshard's ask_window) holds each
// slot in the migrating state a moment after its keys moved, so a running load meets ASK (a slot
// with few keys would otherwise migrate in well under a millisecond) before the MOVED that follows.
const (
	reshardSlotPause = 20 * time.Millisecond
	DefaultAskWindow = 20 * time.Millisecond
)

// busiestSlots picks n slots that from serves, the ones with the most decisions so far first (then
// the highest numbers): moving hot slots is what a resharding does to a limiter, and it makes the
// ASK and MOVED replies visible.
func (r *faultRunner) busiestSlots(from string, n int) ([]int, error) {
	var traffic map[int]int64
	if r.slotTraffic != nil {
		traffic = r.slotTraffic()
	}
	// One CLUSTER SLOTS from the source: asking per slot would take longer than the run.
	c := r.nodeClient(from)
	defer c.Close()
	ranges, err := c.ClusterSlots(context.Background()).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS on %s: %w", from, err)
	}
	var owned []int
	for _, rg := range ranges {
		if len(rg.Nodes) == 0 || rg.Nodes[0].Addr != from {
			continue
		}
		for sl := rg.End; sl >= rg.Start; sl-- {
			owned = append(owned, int(sl))
		}
	}
	if len(owned) < n {
		return nil, fmt.Errorf("%s serves %d slots, fewer than the %d to move", from, len(owned), n)
	}
	sort.SliceStable(owned, func(i, j int) bool { return traffic[owned[i]] > traffic[owned[j]] })
	return owned[:n], nil
}

func (r *faultRunner) nodeAddr(target string) (string, error) {
	i, err := strconv.Atoi(strings.TrimPrefix(target, "node:"))
	if err != nil || i < 0 || i >= len(r.nodes) {
		return "", fmt.Errorf("%s: the cluster has %d nodes", target, len(r.nodes))
	}
	return r.nodes[i].Addr, nil
}

func (r *faultRunner) requirePrimary(addr string) error {
	for _, n := range r.cl.Nodes() {
		if n.Addr == addr {
			if n.Role != cluster.RolePrimary {
				return fmt.Errorf("%s is a %s, not a primary", addr, n.Role)
			}
			return nil
		}
	}
	return fmt.Errorf("%s is not a node of this cluster", addr)
}

// noteReplicationGap adds to the overspend bound what the replicas of addr have not applied yet:
// the bytes between the primary's replication offset and the best replica's own offset (read on
// the replica: the primary's view of it lags by up to a second), converted to decisions at the
// primary's average bytes per script call (a lost debit returns one token).
func (r *faultRunner) noteReplicationGap(ctx context.Context, addr string) {
	primary, acked, err := r.cl.ReplOffsets(ctx, addr)
	if err != nil || primary <= 0 {
		return
	}
	best := int64(0)
	for _, off := range acked {
		best = max(best, off)
	}
	for _, n := range r.cl.ReplicasOf(addr) {
		best = max(best, r.replicaOffset(ctx, n))
	}
	gap := max(primary-best, 0)
	writes := r.nodeWrites(ctx, addr)
	if writes <= 0 {
		return
	}
	bytesPerWrite := float64(primary) / float64(writes)
	r.mu.Lock()
	r.bound += float64(gap) / bytesPerWrite
	r.mu.Unlock()
	r.logf("replication gap of %s before the fault: %d bytes (~%.1f debits)", addr, gap, float64(gap)/bytesPerWrite)
}

// replicaOffset is the replication offset a replica has applied (INFO replication on the
// replica itself), or 0.
func (r *faultRunner) replicaOffset(ctx context.Context, n cluster.Node) int64 {
	addr := n.RealAddr
	if addr == "" {
		addr = n.Addr
	}
	c := r.nodeClient(addr)
	defer c.Close()
	s, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "slave_repl_offset:"); ok {
			off, _ := strconv.ParseInt(v, 10, 64)
			return off
		}
	}
	return 0
}

// nodeWrites counts the script calls a node has executed (INFO commandstats).
func (r *faultRunner) nodeWrites(ctx context.Context, addr string) int64 {
	c := r.nodeClient(addr)
	defer c.Close()
	s, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0
	}
	var n int64
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		for _, kv := range strings.Split(line[strings.IndexByte(line, ':')+1:], ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

// nodeClient is a client of the single node on addr with the cluster's user, password and TLS
// (a plain client without them would be refused by a cluster with RequirePass or TLS).
func (r *faultRunner) nodeClient(addr string) *redis.Client {
	o := &redis.Options{Addr: addr, MaxRetries: -1}
	if r.cl != nil {
		co := r.cl.ClientOptions()
		o.Username, o.Password, o.TLSConfig = co.Username, co.Password, co.TLSConfig
	}
	return redis.NewClient(o)
}

// hold attaches cause to decisions until the returned func is called.
func (r *faultRunner) hold(cause string) func() {
	r.cause.Store(int32(r.causeFor(cause)))
	r.active.Add(1)
	return func() { r.active.Add(-1) }
}

// holdUntilHealthy attaches cause to decisions until the cluster is healthy again (bounded) plus
// causeGrace; the returned func starts that wait in the background.
func (r *faultRunner) holdUntilHealthy(ctx context.Context, cause string) func() {
	release := r.hold(cause)
	return func() {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer release()
			hctx, cancel := context.WithTimeout(ctx, healthyWait)
			defer cancel()
			if err := r.cl.WaitHealthy(hctx); err != nil {
				r.logf("cluster not healthy %s after the %s: %v", healthyWait, cause, err)
				return
			}
			sleepCtx(ctx, causeGrace)
		}()
	}
}

// clusterFailover asks a replica to take over its primary's slots.
func (r *faultRunner) clusterFailover(ctx context.Context, replica, mode string) error {
	c := r.nodeClient(replica)
	defer c.Close()
	args := []any{"cluster", "failover"}
	if mode == "force" || mode == "takeover" {
		args = append(args, strings.ToUpper(mode))
	}
	if err := c.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("CLUSTER FAILOVER on %s: %w", replica, err)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// recorded returns the faults as injected, sorted by time, and the overspend bound they imply.
func (r *faultRunner) recorded() ([]results.Fault, float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]results.Fault(nil), r.events...)
	sort.Slice(out, func(i, j int) bool { return out[i].AtS < out[j].AtS })
	return out, r.bound
}

// recoveredBelow is the share of a second's requests that may still meet trouble in a recovered
// second: a loaded 2-core machine times out the odd request with no fault at all.
const recoveredBelow = 0.01

// detectWithinS bounds how late after a fault ends (AtS + ForS) its first trouble may come and
// still be its own. Every fault here shows at once or within the cluster's failure detection
// (cluster-node-timeout, 1-5 s): a timeout two minutes after a 5 ms latency fault ended is the
// shared machine's, not the fault's.
const detectWithinS = 10

// cleanForS is how long trouble must stay under the noise floor for a fault to count as
// recovered (or until the next fault or the end, if sooner). A lone bad second much later, a
// stall of the shared machine, does not move recovered_s; trouble that comes back within this
// window does.
const cleanForS = 30

// measureRecovery fills each fault's detected_s (the first second with store errors, redirects
// or fail-policy decisions from the fault's start to detectWithinS after its end, and before the
// next fault) and recovered_s (the start of the first second after detection from which such
// trouble stays under 1% of the requests for cleanForS, or until the next fault or the end).
// Both stay 0 when not observed: a fault never detected has no recovery, one whose trouble never
// settles has recovered_s 0.
func measureRecovery(faults []results.Fault, rows []results.Interval) {
	trouble := func(r results.Interval) int64 {
		return r.Errors + r.Timeout + r.Moved + r.Ask + r.NoScript + r.ClusterDown + r.TryAgain + r.Conn + r.FailedOpen + r.FailedClosed
	}
	detectedIn := func(r results.Interval) bool { return trouble(r) > 0 }
	bad := func(r results.Interval) bool { return float64(trouble(r)) > recoveredBelow*float64(max(r.Sent, 1)) }
	for i := range faults {
		f := &faults[i]
		end := len(rows)
		if i+1 < len(faults) {
			// The second in which the next fault starts is that fault's.
			end = min(end, max(int(faults[i+1].AtS), int(f.AtS)+1))
		}
		start := int(f.AtS)
		detectEnd := min(end, int(math.Ceil(f.AtS+f.ForS))+detectWithinS)
		det := -1
		for s := start; s < detectEnd; s++ {
			if detectedIn(rows[s]) {
				det = s
				break
			}
		}
		if det < 0 {
			continue
		}
		f.DetectedS = max(float64(det), f.AtS)
		// The first second from which the next cleanForS (bounded by end) are all clean.
		rec := det
		for s := det; s < end && s < rec+cleanForS; s++ {
			if bad(rows[s]) {
				rec = s + 1
			}
		}
		switch {
		case rec == det:
			// Trouble stayed under the noise floor throughout: recovered as soon as detected.
			f.RecoveredS = f.DetectedS
		case rec < len(rows) && (i+1 >= len(faults) || rec < end):
			f.RecoveredS = float64(rec)
		}
	}
}

// injectGateway executes a fault of the simulated gateways and records its event. A clock skew
// holds its cause while it lasts, so the overspend it lets through is attributed to it; a
// gateway kill holds none: what it costs is false denies, not overspend.
func (r *faultRunner) injectGateway(ctx context.Context, f FaultSpec, at float64) {
	ev := results.Fault{AtS: at, Kind: f.Kind, ForS: time.Duration(f.For).Seconds()}
	if r.onInject != nil {
		r.onInject(at)
	}
	targets, fix := gatewayTargets(f.Target, r.gateways)
	desc := f.Target
	if desc == "" {
		desc = "all"
	}
	desc = fmt.Sprintf("%s (%d of %d gateways)", desc, len(targets), r.gateways)
	switch {
	case fix != "":
		ev.Target = fmt.Sprintf("%s (failed: %s)", f.Target, fix)
	case f.Kind == FaultClockSkew && r.skew != nil:
		off := time.Duration(f.Offset)
		ev.Target = fmt.Sprintf("%s, offset %s", desc, off)
		r.logf("fault at %.1fs: %s %s", at, f.Kind, ev.Target)
		release := r.hold("clock-skew")
		for _, g := range targets {
			r.skew[g].Store(int64(off))
		}
		if f.For == 0 {
			<-ctx.Done()
		} else {
			sleepCtx(ctx, time.Duration(f.For))
		}
		for _, g := range targets {
			r.skew[g].Store(0)
		}
		release()
	case f.Kind == FaultGatewayKill && r.dropGateway != nil:
		var lost int64
		for _, g := range targets {
			lost += r.dropGateway(g)
		}
		ev.Target = fmt.Sprintf("%s, %d leased tokens lost", desc, lost)
		r.logf("fault at %.1fs: %s %s", at, f.Kind, ev.Target)
	default:
		ev.Target = fmt.Sprintf("%s (failed: the run's limiter has no such gateway state)", desc)
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}
