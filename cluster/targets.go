package cluster

import (
	"context"
	"fmt"
)

// Fault targets: the scenario engine names a fault by slot ("the primary of tenant t's slot") or
// by role ("the replica of that primary"); these resolve it against the live cluster, so they
// follow failovers and resharding.

// PrimaryFor returns the primary that serves slot according to CLUSTER NODES of the first node
// that answers (within about 2 s). A primary that was killed and not yet replaced still serves
// its slots in that view and is returned (with Pid 0). It wraps ErrNoOwner when no primary lists
// the slot.
func (l *Local) PrimaryFor(slot int) (Node, error) {
	if slot < 0 || slot >= TotalSlots {
		return Node{}, fmt.Errorf("cluster: PrimaryFor(%d): slot outside 0-%d; compute it with KeySlot", slot, TotalSlots-1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	view, err := l.refresh(ctx)
	if err != nil {
		return Node{}, fmt.Errorf("cluster: PrimaryFor(%d): %w", slot, err)
	}
	for _, v := range view {
		if v.role() != RolePrimary {
			continue
		}
		for _, r := range v.Slots {
			if slot >= r.Start && slot <= r.End {
				return l.nodeByID(v.ID, v.Addr)
			}
		}
	}
	return Node{}, fmt.Errorf("cluster: slot %d: %w in CLUSTER NODES; wait for WaitHealthy", slot, ErrNoOwner)
}

// ReplicasOf returns the current replicas of the primary on primaryAddr (its announced or real
// address), refreshed as Nodes does; nil for an unknown address or a primary without replicas.
func (l *Local) ReplicasOf(primaryAddr string) []Node {
	m, err := l.member(primaryAddr)
	if err != nil {
		return nil
	}
	nodes := l.Nodes() // refreshes roles first
	l.mu.Lock()
	id := m.ID
	l.mu.Unlock()
	var out []Node
	for _, n := range nodes {
		if n.Role == RoleReplica && n.PrimaryID == id && id != "" {
			out = append(out, n)
		}
	}
	return out
}

// nodeByID returns this cluster's node with id, as Nodes reports it.
func (l *Local) nodeByID(id, addr string) (Node, error) {
	for _, n := range l.Nodes() {
		if n.ID == id {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("cluster: node %s (%s) is in CLUSTER NODES but not one of ours: %w", id, addr, ErrUnknownNode)
}
