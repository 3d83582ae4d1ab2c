package scenarios

import (
	"fmt"
	"strings"
	"time"
)

// isGatewayTarget reports whether t names gateways (gateway:N or gateways:K).
func isGatewayTarget(t string) bool {
	return strings.HasPrefix(t, "gateway:") || strings.HasPrefix(t, "gateways:")
}

// onlyAtTargetFor reports every field of f besides at, target and for (and kind) as an error
// that names it: what takes them (a partition, a daemon's fault) takes nothing else.
func onlyAtTargetFor(p string, f FaultSpec, what string, bad badFunc) {
	for _, e := range []struct {
		name string
		set  bool
	}{{"mode", f.Mode != ""}, {"delay", f.Delay != 0}, {"jitter", f.Jitter != 0}, {"slots", f.Slots != 0},
		{"from", f.From != ""}, {"to", f.To != ""}, {"ask_window", f.AskWindow != 0}} {
		if e.set {
			bad(p+"."+e.name, "set", what+" takes at, target and for only: drop "+e.name)
		}
	}
}

// validatePartition checks a partition fault: a length inside the run, the fields it does not
// take, and a target of one of its three sides — a primary of the cluster (local provider), some
// gateways (kind lease), or a region (with regions).
func (s *Spec) validatePartition(p string, f FaultSpec, nodes int, bad badFunc) {
	if f.For <= 0 {
		bad(p+".for", time.Duration(f.For), "a partition heals after its length: give one > 0, e.g. for: 5s")
	} else if s.Duration > 0 && f.At+f.For > s.Duration {
		bad(p+".for", time.Duration(f.For), fmt.Sprintf("the partition would outlast the run (ends at %s): heal it inside the run so the cluster's state can be read", time.Duration(s.Duration)))
	}
	onlyAtTargetFor(p, f, "a partition", bad)
	switch {
	case f.OnRegion():
		s.validateRegionTarget(p, f.Target, bad)
	case f.OnGateways():
		if _, err := GatewayTargets(f.Target, s.GatewayCount()); err != "" {
			bad(p+".target", fmt.Sprintf("%q", f.Target), err)
		}
		if s.Limiter.Kind != KindLease {
			bad(p+".target", fmt.Sprintf("%q", f.Target), fmt.Sprintf("a gateway partition cuts gateways that hold state of their own: only limiter.kind lease has it (kind is %q); partition a primary instead (target: hottest)", s.Limiter.Kind))
		}
	default:
		s.validatePartitionNode(p, f, nodes, bad)
	}
}

// validatePartitionNode checks a partition of a primary: a cluster ratelab started itself (its
// links run through proxies it can cut) and a target naming one primary.
func (s *Spec) validatePartitionNode(p string, f FaultSpec, nodes int, bad badFunc) {
	const fix = "use hottest, node:N, slot:N or primary-of:TENANT (a primary to cut off), gateway:N or gateways:K (gateways to cut off Redis), or region:NAME"
	if !s.NeedsCluster() {
		bad(p+".kind", f.Kind, fmt.Sprintf("a partition of a primary acts on the Redis Cluster; limiter.kind %q has none (use token-bucket or lease)", s.Limiter.Kind))
	}
	switch t := f.Target; {
	case t == "all" || t == "killed":
		bad(p+".target", fmt.Sprintf("%q", t), fix)
	case strings.HasPrefix(t, "node:"):
		if err := checkTarget(t, s.Cluster.Primaries, 0); err != "" {
			bad(p+".target", fmt.Sprintf("%q", t), fmt.Sprintf("node:N of a partition names shard N's primary: 0 <= N < %d (cluster.primaries)", s.Cluster.Primaries))
		}
	default:
		if err := checkTarget(t, nodes, s.Tenants.Count); err != "" {
			bad(p+".target", fmt.Sprintf("%q", t), fix)
		}
	}
	if pr := s.Cluster.Provider; pr != "" && pr != ProviderLocal {
		bad(p+".kind", f.Kind, fmt.Sprintf("a partition cuts the nodes' links through proxies ratelab runs: use cluster.provider: local (provider is %q)", pr))
	}
	if s.Cluster.Primaries < 3 {
		bad(p+".kind", f.Kind, "a partition cuts one primary off the others: set cluster.primaries >= 3 (a majority must remain to promote its replica)")
	}
}

// validateRegionTarget checks target region:NAME against spec.regions.
func (s *Spec) validateRegionTarget(p, t string, bad badFunc) {
	name := strings.TrimPrefix(t, "region:")
	if s.Regions == nil {
		bad(p+".target", fmt.Sprintf("%q", t), "region:NAME cuts a region off the others: set regions (or partition a primary: target hottest)")
		return
	}
	var names []string
	for _, r := range s.Regions.List {
		if r.Name == name {
			return
		}
		names = append(names, r.Name)
	}
	bad(p+".target", fmt.Sprintf("%q", t), fmt.Sprintf("no such region: use region:NAME with one of %s", strings.Join(names, ", ")))
}
