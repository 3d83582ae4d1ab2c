package faults

import (
	"fmt"
	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
	"strconv"
	"strings"
)

// resolve turns a target into node addresses and a readable description.
func (r *Runner) resolve(f scenarios.FaultSpec) ([]string, string, error) {
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
		return primaryOfKey(r.h.HotKey)
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
			if (n.Pid != 0 || !pids) && (f.Kind != scenarios.FaultScriptFlush || n.Role == cluster.RolePrimary) {
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
		return primaryOfKey(r.h.KeyOf(strings.TrimPrefix(t, "primary-of:")))
	}
	return nil, t, fmt.Errorf("unknown target %q", t)
}

func (r *Runner) nodeAddr(target string) (string, error) {
	i, err := strconv.Atoi(strings.TrimPrefix(target, "node:"))
	if err != nil || i < 0 || i >= len(r.nodes) {
		return "", fmt.Errorf("%s: the cluster has %d nodes", target, len(r.nodes))
	}
	return r.nodes[i].Addr, nil
}

func (r *Runner) requirePrimary(addr string) error {
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
