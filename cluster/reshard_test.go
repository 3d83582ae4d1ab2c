package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// tagForSlot finds a hash tag whose keys ("{tag}:...") all hash to slot.
func tagForSlot(t *testing.T, slot int) string {
	t.Helper()
	for i := range 1 << 20 {
		tag := fmt.Sprintf("t%d", i)
		if cluster.KeySlot("{"+tag+"}") == slot {
			return tag
		}
	}
	t.Fatalf("no hash tag for slot %d", slot)
	return ""
}

// TestMigrateSlots moves live slots with their keys between the two primaries of a 2x0 cluster
// and checks what clients see: ASK from the old owner while a slot is migrating (for a key
// already moved), MOVED from it afterwards, every key readable with its value through a
// ClusterClient, the slot map agreed (WaitHealthy) and PrimaryFor following. A failed step leaves
// the slot migrating, and running MigrateSlots again finishes it.
func TestMigrateSlots(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 0})
	ctx := t.Context()
	cc := clustertest.Client(t, l)
	p0, p1 := l.Primaries()[0], l.Primaries()[1]
	if p0.ID == "" || p1.ID == "" {
		t.Fatalf("primaries %+v %+v without IDs", p0, p1)
	}

	// 3 slots at the top of p0's range (0-8191), 250 keys each: 3 batches of at most 100.
	const perSlot = 250
	slots := []int{8189, 8190, 8191}
	keysOf := map[int][]string{}
	for _, s := range slots {
		tag := tagForSlot(t, s)
		for i := range perSlot {
			k := fmt.Sprintf("{%s}:%d", tag, i)
			if err := cc.Set(ctx, k, k, 0).Err(); err != nil {
				t.Fatalf("SET %s: %v", k, err)
			}
			keysOf[s] = append(keysOf[s], k)
		}
	}
	if have, err := l.PrimaryFor(8191); err != nil || have.ID != p0.ID {
		t.Fatalf("PrimaryFor(8191) before = %+v, %v; want %s", have, err, p0.Addr)
	}

	old := plainClient(t, p0.Addr)
	dst := plainClient(t, p1.Addr)
	hooked := 0
	beforeAssign := func(ctx context.Context, slot int) error {
		hooked++
		k := keysOf[slot][0]
		// The key has moved and the slot is migrating: the old owner answers ASK <target>.
		if _, err := old.Get(ctx, k).Result(); err == nil {
			t.Errorf("slot %d migrating: GET %s on the old owner answered", slot, k)
		} else if addr, ok := redis.IsAskError(err); !ok || addr != p1.Addr {
			t.Errorf("slot %d migrating: GET %s on the old owner: err = %v, want ASK %s", slot, k, err, p1.Addr)
		}
		// The target serves it after ASKING.
		var get *redis.StringCmd
		if _, err := dst.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "ASKING")
			get = p.Get(ctx, k)
			return nil
		}); err != nil || get.Val() != k {
			t.Errorf("slot %d migrating: ASKING + GET %s on the target = %q, %v", slot, k, get.Val(), err)
		}
		// A slot not yet migrating is still served by the old owner.
		if slot < 8191 {
			if have, err := old.Get(ctx, keysOf[slot+1][0]).Result(); err != nil || have != keysOf[slot+1][0] {
				t.Errorf("slot %d migrating: GET of a key in slot %d on the old owner = %q, %v", slot, slot+1, have, err)
			}
		}
		return nil
	}
	const pause = 40 * time.Millisecond
	began := time.Now()
	res, err := l.MigrateSlots(ctx, len(slots), p0.Addr, p1.Addr, cluster.WithSlotPause(pause), cluster.WithBeforeAssign(beforeAssign))
	took := time.Since(began)
	if err != nil {
		t.Fatalf("MigrateSlots: %v", err)
	}
	t.Logf("moved %d slots, %d keys in %v", len(res.Slots), res.Keys, took)
	if !slices.Equal(res.Slots, slots) || res.Keys != perSlot*len(slots) || hooked != len(slots) {
		t.Errorf("MigrateSlots = %+v with %d hook calls; want slots %v, %d keys, %d calls", res, hooked, slots, perSlot*len(slots), len(slots))
	}
	if want := pause * time.Duration(len(slots)-1); took < want {
		t.Errorf("MigrateSlots with WithSlotPause(%v) over %d slots took %v, want >= %v", pause, len(slots), took, want)
	}
	for _, s := range slots {
		k := keysOf[s][perSlot-1]
		if _, err := old.Get(ctx, k).Result(); err == nil {
			t.Errorf("slot %d moved: GET %s on the old owner answered", s, k)
		} else if addr, ok := redis.IsMovedError(err); !ok || addr != p1.Addr {
			t.Errorf("slot %d moved: GET %s on the old owner: err = %v, want MOVED %s", s, k, err, p1.Addr)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := l.WaitHealthy(wctx); err != nil {
		t.Fatalf("WaitHealthy after migrating: %v", err)
	}
	if have, err := l.PrimaryFor(8191); err != nil || have.ID != p1.ID {
		t.Errorf("PrimaryFor(8191) after = %+v, %v; want %s", have, err, p1.Addr)
	}
	readAll := func(when string) {
		t.Helper()
		for _, s := range slots {
			for _, k := range keysOf[s] {
				if have, err := cc.Get(ctx, k).Result(); err != nil || have != k {
					t.Fatalf("%s: GET %s through the ClusterClient = %q, %v", when, k, have, err)
				}
			}
		}
	}
	readAll("after migrating")

	// A failing step stops with the slot migrating and says which slot and step; a second run
	// finishes it.
	boom := errors.New("boom")
	back := cluster.SlotRange{Start: 8191, End: 8191}
	res, err = l.MigrateSlots(ctx, 0, p1.RealAddr, p0.RealAddr, cluster.WithSlotRange(back),
		cluster.WithBeforeAssign(func(context.Context, int) error { return boom }))
	if !errors.Is(err, cluster.ErrMigration) || !errors.Is(err, boom) || !strings.Contains(err.Error(), "slot 8191") ||
		!strings.Contains(err.Error(), "before-assign hook") || !strings.Contains(err.Error(), "WithSlotRange") {
		t.Fatalf("MigrateSlots with a failing hook: err = %v, want ErrMigration naming slot 8191, the step and the fix", err)
	}
	if res.Keys != perSlot || len(res.Slots) != 0 {
		t.Errorf("MigrateSlots with a failing hook = %+v, want %d keys moved and no slot assigned", res, perSlot)
	}
	if _, err := dst.Get(ctx, keysOf[8191][0]).Result(); err == nil {
		t.Errorf("slot 8191 left migrating: GET on its owner answered, want ASK")
	} else if _, ok := redis.IsAskError(err); !ok {
		t.Errorf("slot 8191 left migrating: GET on its owner: err = %v, want ASK", err)
	}
	const window = 50 * time.Millisecond
	began = time.Now()
	res, err = l.MigrateSlots(ctx, 0, p1.Addr, p0.Addr, cluster.WithSlotRange(back), cluster.WithAskWindow(window))
	if err != nil || !slices.Equal(res.Slots, []int{8191}) || res.Keys != 0 {
		t.Fatalf("MigrateSlots finishing slot 8191 = %+v, %v; want slot 8191 with 0 keys left to move", res, err)
	}
	if took := time.Since(began); took < window {
		t.Errorf("MigrateSlots of one slot with WithAskWindow(%v) took %v", window, took)
	}
	if err := l.WaitHealthy(wctx); err != nil {
		t.Fatalf("WaitHealthy after finishing slot 8191: %v", err)
	}
	if have, err := l.PrimaryFor(8191); err != nil || have.ID != p0.ID {
		t.Errorf("PrimaryFor(8191) after moving it back = %+v, %v; want %s", have, err, p0.Addr)
	}
	readAll("after moving slot 8191 back")

	// Bad calls fail before touching a slot, naming the problem.
	tests := []struct {
		name     string
		n        int
		from, to string
		opts     []cluster.MigrateOption
		want     string
		is       error
	}{
		{"no slots", 0, p0.Addr, p1.Addr, nil, "n = 0", nil},
		{"negative n", -1, p0.Addr, p1.Addr, nil, "n = -1", nil},
		{"more than owned", 20000, p0.Addr, p1.Addr, nil, "serves only 8190 slots (0-8188,8191)", nil},
		{"same node", 1, p0.Addr, p0.RealAddr, nil, "same node", nil},
		{"unknown node", 1, "127.0.0.1:1", p1.Addr, nil, "127.0.0.1:1", cluster.ErrUnknownNode},
		{"range not owned", 0, p1.Addr, p0.Addr, []cluster.MigrateOption{cluster.WithSlotRange(cluster.SlotRange{Start: 0, End: 5})}, "slot 0 is not served", nil},
		{"range and n disagree", 3, p0.Addr, p1.Addr, []cluster.MigrateOption{cluster.WithSlotRange(cluster.SlotRange{Start: 0, End: 5})}, "pass 0 or 6", nil},
		{"bad batch and timeout", 1, p0.Addr, p1.Addr, []cluster.MigrateOption{cluster.WithBatch(0), cluster.WithMigrateTimeout(0)}, "WithBatch(0): want >= 1 keys per MIGRATE (default 100); WithMigrateTimeout(0s)", nil},
	}
	for _, tt := range tests {
		res, err := l.MigrateSlots(ctx, tt.n, tt.from, tt.to, tt.opts...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) || len(res.Slots) != 0 {
			t.Errorf("%s: MigrateSlots = %+v, %v; want an error containing %q (is %v)", tt.name, res, err, tt.want, tt.is)
		}
	}
	if have, err := l.PrimaryFor(8190); err != nil || have.ID != p1.ID {
		t.Errorf("PrimaryFor(8190) after the bad calls = %+v, %v; want %s still", have, err, p1.Addr)
	}
	if _, err := l.PrimaryFor(cluster.TotalSlots); err == nil {
		t.Errorf("PrimaryFor(%d): want an error", cluster.TotalSlots)
	}
}

// A third primary that a failover turns into a replica while a slot migrates does not fail the
// slot's assignment: it refuses SETSLOT (only primaries take it) and learns the owner from its
// new primary.
func TestMigrateSlotsAcrossFailover(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{})
	nodes := l.Nodes()
	// Node 5 replicates node 2, the third primary: fail over to it, and wait until node 2 knows
	// it is a replica.
	failover := cluster.WithBeforeAssign(func(ctx context.Context, _ int) error {
		c := redis.NewClient(&redis.Options{Addr: nodes[5].Addr})
		defer c.Close()
		if err := c.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
			return err
		}
		old := redis.NewClient(&redis.Options{Addr: nodes[2].Addr})
		defer old.Close()
		for {
			if role, err := old.Do(ctx, "ROLE").Slice(); err == nil && role[0] == "slave" {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := l.MigrateSlots(ctx, 1, nodes[0].Addr, nodes[1].Addr, failover)
	if err != nil {
		t.Fatalf("MigrateSlots with a failover of another primary before the assignment: %v", err)
	}
	if err := l.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if owner, err := l.PrimaryFor(res.Slots[0]); err != nil || owner.Addr != nodes[1].Addr {
		t.Errorf("slot %d is served by %s (%v), want %s", res.Slots[0], owner.Addr, err, nodes[1].Addr)
	}
}
