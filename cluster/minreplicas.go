package cluster

import (
	"context"
	"fmt"
)

// setMinReplicas applies Options.MinReplicasToWrite and MinReplicasMaxLag to m's node with
// CONFIG SET, each only when set (0 keeps Redis' default). Every node gets them, as a replica
// enforces them once promoted. They are set once the cluster is formed, not in redis.conf:
// formation's FLUSHALL on each new primary is a write, which a primary whose replica has not
// yet been counted as good (Redis counts once a second) would refuse with NOREPLICAS. Restart
// sets them again on the restarted node.
func (l *Local) setMinReplicas(ctx context.Context, m *member) error {
	var args []any
	if n := l.opts.MinReplicasToWrite; n > 0 {
		args = append(args, "min-replicas-to-write", n)
	}
	if n := l.opts.MinReplicasMaxLag; n > 0 {
		args = append(args, "min-replicas-max-lag", n)
	}
	if len(args) == 0 {
		return nil
	}
	if err := m.client.Do(ctx, append([]any{"CONFIG", "SET"}, args...)...).Err(); err != nil {
		return fmt.Errorf("cluster: CONFIG SET %v on %s: %w", args, m.Addr, err)
	}
	return nil
}
