package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Live resharding, done from Go the way `redis-cli --cluster reshard` does it. For each slot s:
//
//  1. CLUSTER SETSLOT s IMPORTING <from-id> on the target (first, so that an ASK the source
//     sends from step 2 on is honoured by the target);
//  2. CLUSTER SETSLOT s MIGRATING <to-id> on the source. From now on the source answers for the
//     slot's keys it still holds and answers ASK <target> for the others: clients retry on the
//     target after ASKING;
//  3. until the slot is empty on the source: CLUSTER GETKEYSINSLOT s <batch>, then
//     MIGRATE <target host> <target port> "" 0 <timeout ms> KEYS k1 k2 ... on the source (atomic
//     per batch; the source blocks while it transfers);
//  4. CLUSTER SETSLOT s NODE <to-id> on the target (which bumps its config epoch, so its claim
//     wins), then on the source, then on every other primary. Clients now get MOVED <target>
//     from the source.
//
// The target address in MIGRATE is the announced one, so with Options.Proxy the transfer flows
// through the target's latency proxy, as it would cross a slow network.

const (
	// DefaultMigrateBatch is how many keys one GETKEYSINSLOT + MIGRATE round moves.
	DefaultMigrateBatch = 100
	// DefaultMigrateTimeout is MIGRATE's timeout: the longest the source may wait on the target
	// during one batch's transfer.
	DefaultMigrateTimeout = 5 * time.Second
)

// MigrateOption configures MigrateSlots.
type MigrateOption func(*migrateConfig)

type migrateConfig struct {
	slots        *SlotRange
	pause        time.Duration
	askWindow    time.Duration
	batch        int
	timeout      time.Duration
	beforeAssign func(ctx context.Context, slot int) error
}

// WithSlotRange moves exactly the slots of r (all must be served by the source) instead of the
// source's highest n; n must then be 0 or r.Len().
func WithSlotRange(r SlotRange) MigrateOption { return func(c *migrateConfig) { c.slots = &r } }

// WithSlotPause waits d between two slots (after one slot's SETSLOT NODE, before the next one's
// IMPORTING), so that a load running meanwhile sees the moved slots answer MOVED one after the
// other. Default 0.
func WithSlotPause(d time.Duration) MigrateOption { return func(c *migrateConfig) { c.pause = d } }

// WithAskWindow holds every slot for d after its keys have moved and before SETSLOT NODE: the
// window in which the source answers ASK for every key of the slot. Default 0 (a slot with a
// few keys is then in that state for well under a millisecond, and a load rarely sees ASK).
func WithAskWindow(d time.Duration) MigrateOption { return func(c *migrateConfig) { c.askWindow = d } }

// WithBatch sets how many keys one MIGRATE moves; default DefaultMigrateBatch.
func WithBatch(keys int) MigrateOption { return func(c *migrateConfig) { c.batch = keys } }

// WithMigrateTimeout sets MIGRATE's timeout; default DefaultMigrateTimeout.
func WithMigrateTimeout(d time.Duration) MigrateOption {
	return func(c *migrateConfig) { c.timeout = d }
}

// WithBeforeAssign calls fn for every slot once its keys have moved (after the ASK window),
// before SETSLOT NODE. An error stops the migration with that slot still migrating; running
// MigrateSlots again for it finishes it. Tests use it to look at a slot mid-migration.
func WithBeforeAssign(fn func(ctx context.Context, slot int) error) MigrateOption {
	return func(c *migrateConfig) { c.beforeAssign = fn }
}

// MigrateResult is what MigrateSlots moved.
type MigrateResult struct {
	// Slots are the slots whose ownership moved, in the order they moved (ascending).
	Slots []int
	// Keys counts the keys listed by GETKEYSINSLOT and migrated (a key that expired in between
	// is counted, though MIGRATE skips it).
	Keys int
}

// migration is one MigrateSlots call under way.
type migration struct {
	cfg            migrateConfig
	from, to       Node
	src, dst       *redis.Client   // on the real addresses, read timeout above the MIGRATE timeout
	others         []*redis.Client // control clients of the other primaries
	otherAddrs     []string
	toHost, toPort string
	auth           auth // credentials MIGRATE passes to the target
}

// MigrateSlots moves n slots (the highest n that the primary on fromAddr serves, or
// WithSlotRange) with their keys to the primary on toAddr, one slot after another, while the
// cluster keeps serving (see the steps above). Addresses may be announced or real ones. It
// returns what moved, also on error. An error names the slot and the step; that slot may be left
// migrating, and MigrateSlots with WithSlotRange for it finishes it. Do not run two migrations of
// the same slots at once.
func (l *Local) MigrateSlots(ctx context.Context, n int, fromAddr, toAddr string, opts ...MigrateOption) (MigrateResult, error) {
	var res MigrateResult
	cfg := migrateConfig{batch: DefaultMigrateBatch, timeout: DefaultMigrateTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(n); err != nil {
		return res, err
	}
	from, err := l.member(fromAddr)
	if err != nil {
		return res, err
	}
	to, err := l.member(toAddr)
	if err != nil {
		return res, err
	}
	if from == to {
		return res, fmt.Errorf("cluster: MigrateSlots: from %s and to %s are the same node; want two primaries", fromAddr, toAddr)
	}
	mg, slots, err := l.planMigration(ctx, n, from, to, cfg)
	if err != nil {
		return res, err
	}
	defer mg.close()
	for i, s := range slots {
		if i > 0 && cfg.pause > 0 {
			if err := sleepCtx(ctx, cfg.pause); err != nil {
				return res, fmt.Errorf("cluster: MigrateSlots: pause before slot %d: %w (%d slots moved)", s, err, len(res.Slots))
			}
		}
		keys, err := mg.slot(ctx, s)
		res.Keys += keys
		if err != nil {
			return res, err
		}
		res.Slots = append(res.Slots, s)
	}
	return res, nil
}

// validate checks the options and n, reporting every problem at once.
func (c migrateConfig) validate(n int) error {
	var probs []string
	switch {
	case c.slots == nil && n <= 0:
		probs = append(probs, fmt.Sprintf("n = %d: want >= 1 slots, or 0 with WithSlotRange", n))
	case c.slots != nil && (c.slots.Start < 0 || c.slots.End >= TotalSlots || c.slots.Start > c.slots.End):
		probs = append(probs, fmt.Sprintf("WithSlotRange(%v): want 0 <= start <= end <= %d", *c.slots, TotalSlots-1))
	case c.slots != nil && n != 0 && n != c.slots.Len():
		probs = append(probs, fmt.Sprintf("n = %d with WithSlotRange(%v) of %d slots: pass 0 or %d", n, *c.slots, c.slots.Len(), c.slots.Len()))
	}
	if c.batch < 1 {
		probs = append(probs, fmt.Sprintf("WithBatch(%d): want >= 1 keys per MIGRATE (default %d)", c.batch, DefaultMigrateBatch))
	}
	if c.timeout < time.Millisecond {
		probs = append(probs, fmt.Sprintf("WithMigrateTimeout(%v): want >= 1ms (default %v)", c.timeout, DefaultMigrateTimeout))
	}
	if c.pause < 0 {
		probs = append(probs, fmt.Sprintf("WithSlotPause(%v): want >= 0", c.pause))
	}
	if c.askWindow < 0 {
		probs = append(probs, fmt.Sprintf("WithAskWindow(%v): want >= 0", c.askWindow))
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("cluster: MigrateSlots: %s", strings.Join(probs, "; "))
}

// planMigration reads the source's CLUSTER NODES, checks that both nodes are primaries, picks the
// slots and opens the clients.
func (l *Local) planMigration(ctx context.Context, n int, from, to *member, cfg migrateConfig) (*migration, []int, error) {
	view, err := l.view(ctx, from)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: MigrateSlots: %w", err)
	}
	l.mu.Lock()
	fromNode, toNode := from.Node, to.Node
	l.mu.Unlock()
	var owned []SlotRange
	primaries := map[string]bool{}
	for _, v := range view {
		if v.role() == RolePrimary {
			primaries[v.ID] = true
		}
		if v.ID == fromNode.ID {
			owned = v.Slots
		}
	}
	for _, nd := range []Node{fromNode, toNode} {
		if !primaries[nd.ID] {
			return nil, nil, fmt.Errorf("cluster: MigrateSlots: node %s is not a primary in %s's CLUSTER NODES; resolve primaries with PrimaryFor", nd.Addr, fromNode.Addr)
		}
	}
	slots, err := pickSlots(n, owned, cfg.slots)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: MigrateSlots from %s: %w", fromNode.Addr, err)
	}
	host, port, err := net.SplitHostPort(toNode.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: MigrateSlots: target address %q: %w", toNode.Addr, err)
	}
	mg := &migration{
		cfg: cfg, from: fromNode, to: toNode, toHost: host, toPort: port,
		src:  l.newMigrateClient(fromNode.RealAddr, cfg.timeout),
		dst:  l.newMigrateClient(toNode.RealAddr, cfg.timeout),
		auth: l.auth,
	}
	l.mu.Lock()
	for _, m := range l.members {
		if m != nil && m.ID != fromNode.ID && m.ID != toNode.ID && primaries[m.ID] {
			mg.others = append(mg.others, m.client)
			mg.otherAddrs = append(mg.otherAddrs, m.Addr)
		}
	}
	l.mu.Unlock()
	return mg, slots, nil
}

// pickSlots returns the slots of r (each must be in owned), or the highest n of owned, ascending.
func pickSlots(n int, owned []SlotRange, r *SlotRange) ([]int, error) {
	has := func(s int) bool {
		for _, o := range owned {
			if s >= o.Start && s <= o.End {
				return true
			}
		}
		return false
	}
	var out []int
	if r != nil {
		for s := r.Start; s <= r.End; s++ {
			if !has(s) {
				return nil, fmt.Errorf("WithSlotRange(%v): slot %d is not served by the source (it serves %s)", *r, s, rangesString(owned))
			}
			out = append(out, s)
		}
		return out, nil
	}
	total := 0
	for _, o := range owned {
		total += o.Len()
	}
	if n > total {
		return nil, fmt.Errorf("n = %d: the source serves only %d slots (%s); ask for at most %d", n, total, rangesString(owned), total)
	}
	sorted := slices.Clone(owned)
	slices.SortFunc(sorted, func(a, b SlotRange) int { return b.Start - a.Start }) // highest first
	for _, o := range sorted {
		for s := o.End; s >= o.Start && len(out) < n; s-- {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

// rangesString renders "0-5460,10923" ("none" when empty).
func rangesString(rs []SlotRange) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// slot moves one slot and returns how many keys it migrated.
func (mg *migration) slot(ctx context.Context, s int) (int, error) {
	if err := mg.dst.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", mg.from.ID).Err(); err != nil {
		return 0, mg.fail(s, "importing", fmt.Sprintf("CLUSTER SETSLOT %d IMPORTING %s", s, mg.from.ID), mg.to.Addr, err)
	}
	if err := mg.src.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", mg.to.ID).Err(); err != nil {
		return 0, mg.fail(s, "migrating", fmt.Sprintf("CLUSTER SETSLOT %d MIGRATING %s", s, mg.to.ID), mg.from.Addr, err)
	}
	moved := 0
	timeoutMs := mg.cfg.timeout.Milliseconds()
	for {
		keys, err := mg.src.ClusterGetKeysInSlot(ctx, s, mg.cfg.batch).Result()
		if err != nil {
			return moved, mg.fail(s, "listing keys", fmt.Sprintf("CLUSTER GETKEYSINSLOT %d %d", s, mg.cfg.batch), mg.from.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		args := make([]any, 0, 7+len(keys))
		args = append(args, "MIGRATE", mg.toHost, mg.toPort, "", 0, timeoutMs)
		// The source connects to the target as a client: it needs the target's credentials.
		// (The error below names the command without them.)
		switch {
		case mg.auth.user != "":
			args = append(args, "AUTH2", mg.auth.user, mg.auth.password)
		case mg.auth.password != "":
			args = append(args, "AUTH", mg.auth.password)
		}
		args = append(args, "KEYS")
		for _, k := range keys {
			args = append(args, k)
		}
		if err := mg.src.Do(ctx, args...).Err(); err != nil {
			return moved, mg.fail(s, "moving keys", fmt.Sprintf("MIGRATE %s %s \"\" 0 %d KEYS (%d keys)", mg.toHost, mg.toPort, timeoutMs, len(keys)), mg.from.Addr, err)
		}
		moved += len(keys)
	}
	if mg.cfg.askWindow > 0 {
		if err := sleepCtx(ctx, mg.cfg.askWindow); err != nil {
			return moved, mg.fail(s, "ask window", "wait", "-", err)
		}
	}
	if mg.cfg.beforeAssign != nil {
		if err := mg.cfg.beforeAssign(ctx, s); err != nil {
			return moved, mg.fail(s, "before-assign hook", "WithBeforeAssign func", "-", err)
		}
	}
	assign := fmt.Sprintf("CLUSTER SETSLOT %d NODE %s", s, mg.to.ID)
	clients := append([]*redis.Client{mg.dst, mg.src}, mg.others...)
	addrs := append([]string{mg.to.Addr, mg.from.Addr}, mg.otherAddrs...)
	for i, c := range clients {
		err := c.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", mg.to.ID).Err()
		if err != nil && i >= 2 && strings.Contains(err.Error(), "only with masters") {
			// Another primary became a replica since the migration began (a failover meanwhile):
			// it learns the slot's owner from its new primary. The target and the source, which
			// decide the slot, have it.
			continue
		}
		if err != nil {
			return moved, mg.fail(s, "assigning", assign, addrs[i], err)
		}
	}
	return moved, nil
}

// fail builds the error of one step: the slot, the step, the command and the node, the cause,
// and how to finish the slot.
func (mg *migration) fail(s int, step, cmd, on string, err error) error {
	return fmt.Errorf("cluster: migrate slot %d from %s to %s: step %q (%s on %s): %w: %w; the slot may be left migrating: "+
		"MigrateSlots(ctx, 0, %q, %q, WithSlotRange(SlotRange{Start: %d, End: %d})) finishes it",
		s, mg.from.Addr, mg.to.Addr, step, cmd, on, ErrMigration, err, mg.from.Addr, mg.to.Addr, s, s)
}

func (mg *migration) close() {
	_ = mg.src.Close()
	_ = mg.dst.Close()
}

// newMigrateClient is a control client whose read timeout leaves room for a MIGRATE that may
// take up to timeout.
func (l *Local) newMigrateClient(addr string, timeout time.Duration) *redis.Client {
	o := nodeClientOptions(addr)
	l.auth.apply(o)
	o.ReadTimeout = timeout + probeTimeout
	return redis.NewClient(o)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
