package cluster

import (
	"context"
	"fmt"
	"slices"
)

// NodeView is one line of CLUSTER NODES: what one node (the observer) believes about another,
// or about itself.
type NodeView struct {
	// ID is the node's 40-character ID.
	ID string `json:"id"`
	// Addr is the announced "127.0.0.1:PORT", as Node.Addr (the proxy under Options.Proxy).
	Addr string `json:"addr"`
	// BusPort is the announced cluster bus port (the bus proxy under Options.Partitionable).
	BusPort int `json:"bus_port"`
	// Flags are Redis' flags as printed: myself, master, slave, fail? (the observer has not
	// heard from the node for cluster-node-timeout), fail (a majority of primaries agreed),
	// handshake, noaddr, nofailover.
	Flags []string `json:"flags"`
	// Role is RolePrimary or RoleReplica as the observer sees it; "" when neither flag is set.
	Role string `json:"role"`
	// PrimaryID is the ID of the primary a replica follows; "" for a primary.
	PrimaryID string `json:"primary_id,omitempty"`
	// ConfigEpoch is the node's config epoch as the observer knows it.
	ConfigEpoch int64 `json:"config_epoch"`
	// Connected is the link state: the observer's cluster bus link to the node is up (Redis
	// prints "connected" for the observer itself too).
	Connected bool `json:"connected"`
	// Slots are the slot ranges the observer believes the node serves (migrations left out).
	Slots []SlotRange `json:"slots,omitempty"`
}

// Has reports whether the node carries flag (e.g. "fail?").
func (v NodeView) Has(flag string) bool { return slices.Contains(v.Flags, flag) }

// Myself reports whether this is the observer's own line.
func (v NodeView) Myself() bool { return v.Has("myself") }

// Suspected reports the fail? flag (PFAIL): the observer has not heard from the node within
// cluster-node-timeout.
func (v NodeView) Suspected() bool { return v.Has("fail?") }

// Failed reports the fail flag (FAIL): a majority of primaries agreed the node is failing.
func (v NodeView) Failed() bool { return v.Has("fail") }

// NodesSeenBy returns CLUSTER NODES as the node on addr (announced or real address) sees the
// cluster, one NodeView per line in Redis' order. It asks over the control connection, so a
// latency fault or a partition does not stand in the way; a paused or dead node is an error.
func (l *Local) NodesSeenBy(ctx context.Context, addr string) ([]NodeView, error) {
	m, err := l.member(addr)
	if err != nil {
		return nil, err
	}
	lines, err := l.view(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("cluster: NodesSeenBy: %w", err)
	}
	return nodeViews(lines), nil
}

// nodeViews exports parsed CLUSTER NODES lines.
func nodeViews(lines []nodeLine) []NodeView {
	out := make([]NodeView, len(lines))
	for i, n := range lines {
		out[i] = NodeView{
			ID: n.ID, Addr: n.Addr, BusPort: n.BusPort, Flags: n.Flags, Role: n.role(), PrimaryID: n.PrimaryID,
			ConfigEpoch: n.ConfigEpoch, Connected: n.Connected, Slots: n.Slots,
		}
	}
	return out
}
