package cluster

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// NodeStatus is one node as it reports itself.
type NodeStatus struct {
	Node
	// Running: the process exists (and, when attached, is still this node's redis-server).
	Running bool `json:"running"`
	// State is the node's cluster_state ("ok", "fail"), "down" when the process does not run, or
	// "unreachable" when it runs but does not answer.
	State string `json:"cluster_state"`
	// Flags are the node's own CLUSTER NODES flags (e.g. "myself,master").
	Flags []string `json:"flags,omitempty"`
	// Slots are the slot ranges the node serves as a primary.
	Slots []SlotRange `json:"slots,omitempty"`
	// Err says why State is "unreachable".
	Err string `json:"error,omitempty"`
}

// Status is a snapshot of a cluster for `ratelab cluster status`.
type Status struct {
	StateFile    string       `json:"state_file,omitempty"`
	Dir          string       `json:"dir"`
	RedisVersion string       `json:"redis_version"`
	Nodes        []NodeStatus `json:"nodes"`
}

// Status asks every node for its cluster_state, role and slots.
func (l *Local) Status(ctx context.Context) Status {
	l.mu.Lock()
	members := append([]*member(nil), l.members...)
	st := Status{StateFile: l.stateFile, Dir: l.root, RedisVersion: l.version}
	l.mu.Unlock()
	for _, m := range members {
		if m == nil {
			continue
		}
		l.mu.Lock()
		ns := NodeStatus{Node: m.Node, Running: l.alive(m), State: "down"}
		l.mu.Unlock()
		if !ns.Running {
			ns.Pid = 0
			st.Nodes = append(st.Nodes, ns)
			continue
		}
		ns.State = "unreachable"
		info, err := m.client.ClusterInfo(ctx).Result()
		if err == nil {
			var view []nodeLine
			if view, err = l.view(ctx, m); err == nil {
				ns.State = parseInfo(info)["cluster_state"]
				for _, v := range view {
					if v.has("myself") {
						ns.ID, ns.Flags, ns.Slots = v.ID, v.Flags, v.Slots
						if r := v.role(); r != "" {
							ns.Role, ns.PrimaryID = r, v.PrimaryID
						}
					}
				}
			}
		}
		if err != nil {
			ns.Err = err.Error()
		}
		st.Nodes = append(st.Nodes, ns)
	}
	return st
}

// ReadStatus reads the detached cluster recorded in stateFile (DefaultStateFile() when "") and
// asks its nodes for their state. It wraps ErrNoState when there is no state file. It is the
// library entry point of `ratelab cluster status`.
func ReadStatus(ctx context.Context, stateFile string) (Status, error) {
	if stateFile == "" {
		stateFile = DefaultStateFile()
	}
	l, err := readState(stateFile)
	if err != nil {
		return Status{}, err
	}
	defer l.Close()
	return l.Status(ctx), nil
}

// Healthy reports whether every node runs and reports cluster_state:ok.
func (s Status) Healthy() bool {
	for _, n := range s.Nodes {
		if n.State != "ok" {
			return false
		}
	}
	return len(s.Nodes) > 0
}

// WriteText prints s as a table: one row per node with its address, pid, role, primary, state
// and slot ranges.
func (s Status) WriteText(w io.Writer) error {
	addrOf := map[string]string{}
	for _, n := range s.Nodes {
		addrOf[n.ID] = n.Addr
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "redis %s, dir %s", s.RedisVersion, s.Dir)
	if s.StateFile != "" {
		fmt.Fprintf(tw, ", state %s", s.StateFile)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "ADDR\tPID\tROLE\tPRIMARY\tSTATE\tSLOTS")
	for _, n := range s.Nodes {
		primary := "-"
		if n.PrimaryID != "" {
			primary = addrOf[n.PrimaryID]
			if primary == "" {
				primary = n.PrimaryID
			}
		}
		slots := make([]string, len(n.Slots))
		for i, r := range n.Slots {
			slots[i] = r.String()
		}
		state := n.State
		if n.Err != "" {
			state += " (" + n.Err + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", n.Addr, n.Pid, n.Role, primary, state, strings.Join(slots, ","))
	}
	return tw.Flush()
}
