package faults

import (
	"context"
	"ratelab/scenarios/cluster"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// noteReplicationGap adds to the overspend bound what the replicas of addr have not applied yet:
// the bytes between the primary's replication offset and the best replica's own offset (read on
// the replica: the primary's view of it lags by up to a second), converted to decisions at the
// primary's average bytes per script call (a lost debit returns one token). It returns the gap
// in debits (0 when it cannot be read).
func (r *Runner) noteReplicationGap(ctx context.Context, addr string) float64 {
	primary, acked, err := r.cl.ReplOffsets(ctx, addr)
	if err != nil || primary <= 0 {
		return 0
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
		return 0
	}
	debits := float64(gap) / (float64(primary) / float64(writes))
	r.mu.Lock()
	r.bound += debits
	r.mu.Unlock()
	r.h.Logf("replication gap of %s before the fault: %d bytes (~%.1f debits)", addr, gap, debits)
	return debits
}

// replicaOffset is the replication offset a replica has applied (INFO replication on the
// replica itself), or 0.
func (r *Runner) replicaOffset(ctx context.Context, n cluster.Node) int64 {
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
func (r *Runner) nodeWrites(ctx context.Context, addr string) int64 {
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
func (r *Runner) nodeClient(addr string) *redis.Client {
	o := &redis.Options{Addr: addr, MaxRetries: -1}
	if r.cl != nil {
		co := r.cl.ClientOptions()
		o.Username, o.Password, o.TLSConfig = co.Username, co.Password, co.TLSConfig
	}
	return redis.NewClient(o)
}
