package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FaultKind names what a fault does: one of the Fault* constants.
type FaultKind string

// Fault kinds a scenario can schedule.
const (
	FaultKillPrimary FaultKind = "kill-primary" // SIGKILL the target primary; its replica takes over
	FaultPause       FaultKind = "pause"        // SIGSTOP the target for `for`, then SIGCONT: real timeouts, real failure detection
	FaultFailover    FaultKind = "failover"     // CLUSTER FAILOVER [FORCE|TAKEOVER] on a replica of the target primary
	FaultLatency     FaultKind = "latency"      // add delay ± jitter to every byte through the target's proxy for `for`
	FaultReshard     FaultKind = "reshard"      // live-migrate `slots` slots from one primary to another
	FaultScriptFlush FaultKind = "script-flush" // SCRIPT FLUSH: the next EVALSHA answers NOSCRIPT
	FaultRestart     FaultKind = "restart"      // stop and start the target node (same port, same node ID)
	FaultClockSkew   FaultKind = "clock-skew"   // offset the target gateways' clocks by `offset` for `for`
	FaultGatewayKill FaultKind = "gateway-kill" // the target gateways die and restart empty: their leases are lost
	FaultPartition   FaultKind = "partition"    // cut a primary off the other nodes, gateways off Redis, or a daemon off its peers, for `for`
	FaultKill        FaultKind = "kill"         // SIGKILL the target gubernator daemon, restart it after `for`
)

var faultKinds = []FaultKind{FaultKillPrimary, FaultPause, FaultFailover, FaultLatency, FaultReshard, FaultScriptFlush, FaultRestart, FaultClockSkew, FaultGatewayKill, FaultPartition, FaultKill}

// OnGateway reports whether every fault of kind k acts on the gateways, not on the cluster (a
// partition may do either: see FaultSpec.OnGateways).
func (k FaultKind) OnGateway() bool { return k == FaultClockSkew || k == FaultGatewayKill }

// OnGateways reports whether the fault acts on the gateways, not on the cluster: a clock-skew,
// a gateway-kill, or a partition of gateways (target gateway:N or gateways:K).
func (f FaultSpec) OnGateways() bool {
	return f.Kind.OnGateway() || (f.Kind == FaultPartition && isGatewayTarget(f.Target))
}

// OnRegion reports whether the fault acts on a region (a partition with target region:NAME),
// which the multi-region run carries out.
func (f FaultSpec) OnRegion() bool {
	return f.Kind == FaultPartition && strings.HasPrefix(f.Target, "region:")
}

// OnCluster reports whether the fault acts on the Redis Cluster's nodes.
func (f FaultSpec) OnCluster() bool { return !f.OnGateways() && !f.OnRegion() && !f.OnDaemon() }

// DefaultAskWindow is how long a reshard holds each slot migrating after its keys moved (a
// fault's ask_window when 0): long enough for a running load to meet ASK before the MOVED.
const DefaultAskWindow = 20 * time.Millisecond

// FaultSpec is one scheduled fault.
type FaultSpec struct {
	// At is when the fault starts, from the start of the run. Required, inside the run.
	At Duration `yaml:"at"`
	// Kind is one of kill-primary, pause, failover, latency, reshard, script-flush, restart
	// (faults of the cluster), clock-skew or gateway-kill (faults of the simulated gateways),
	// partition (of either), or kill (of a gubernator daemon). Kind gubernator's faults are
	// kill, pause and partition of a daemon.
	Kind FaultKind `yaml:"kind"`
	// Target is hottest (the primary owning the hottest tenant's slot), node:N, slot:N (the
	// primary owning slot N), primary-of:TENANT, all, or killed (the node an earlier kill-primary
	// took down: to restart it). Default hottest. node:N is, for kill-primary, failover and a
	// reshard's from/to, the N-th shard in slot order as the run started, whichever of its nodes
	// is primary at the fault; for the other faults, the N-th node as started (primaries first;
	// on an external cluster, primaries by slot, then their replicas).
	// Gateway faults take gateway:N (the N-th simulated gateway), gateways:K (the first K) or
	// all (the default). A partition takes hottest, node:N (shard N's primary), slot:N or
	// primary-of:TENANT (that primary is cut off the other nodes: cluster bus and replication;
	// clients still reach it), gateway:N or gateways:K (those gateways lose Redis), or
	// region:NAME (with regions: that region is cut off the others).
	// A fault of limiter.kind gubernator takes daemon:N (the N-th daemon as started) and no
	// other target; daemon:N is an error on the Redis kinds.
	Target string `yaml:"target,omitempty"`
	// For is how long a pause, latency, clock-skew or partition fault lasts (latency and
	// clock-skew: 0 = to the end of the run; a partition heals after it and needs one). A
	// daemon's kill, pause or partition needs one: the daemon is restarted, resumed or healed
	// after it.
	For Duration `yaml:"for,omitempty"`
	// Mode of a failover: default, force or takeover (CLUSTER FAILOVER's option).
	Mode string `yaml:"mode,omitempty"`
	// Delay and Jitter of a latency fault: each byte is held delay ± jitter.
	Delay  Duration `yaml:"delay,omitempty"`
	Jitter Duration `yaml:"jitter,omitempty"`
	// Slots, From and To of a reshard: how many slots move from which primary (node:N) to which.
	Slots int    `yaml:"slots,omitempty"`
	From  string `yaml:"from,omitempty"`
	To    string `yaml:"to,omitempty"`
	// AskWindow of a reshard: how long each slot stays migrating after its keys moved, the
	// window in which every request for it meets ASK (0 = DefaultAskWindow). A limiter's slot
	// holds few keys and moves almost at once; the window makes ASK visible to a running load.
	AskWindow Duration `yaml:"ask_window,omitempty"`
	// Offset of a clock-skew fault: added to the target gateways' now (negative: behind).
	Offset Duration `yaml:"offset,omitempty"`
}

// validateFaults checks the fault schedule against the run: kinds, times inside the run, targets
// that can exist in the topology, the fields each kind needs.
func (s *Spec) validateFaults(bad badFunc) {
	nodes := 0
	if s.Cluster.Replicas != nil {
		nodes = s.Cluster.Primaries * (1 + *s.Cluster.Replicas)
	}
	for i, f := range s.Faults {
		p := fmt.Sprintf("faults[%d]", i)
		if !slices.Contains(faultKinds, f.Kind) {
			bad(p+".kind", fmt.Sprintf("%q", f.Kind), "use one of "+joinKinds(faultKinds))
			continue
		}
		if f.At < 0 || (s.Duration > 0 && f.At >= s.Duration) {
			bad(p+".at", time.Duration(f.At), fmt.Sprintf("must be within the run: 0 <= at < duration (%s)", time.Duration(s.Duration)))
		}
		if f.Offset != 0 && f.Kind != FaultClockSkew {
			bad(p+".offset", time.Duration(f.Offset), "only a clock-skew fault has an offset")
		}
		switch {
		case f.OnDaemon() || (s.Limiter.Kind == KindGubernator && !f.OnGateways() && !f.OnRegion()):
			s.validateDaemonFault(p, f, bad)
		case f.Kind == FaultKill:
			bad(p+".kind", f.Kind, "kill acts on a gubernator daemon (limiter.kind gubernator, target daemon:N): on a Redis Cluster use kill-primary")
		case f.Kind == FaultPartition:
			s.validatePartition(p, f, nodes, bad)
		case f.Kind.OnGateway():
			s.validateGatewayFault(p, f, bad)
		default:
			s.validateClusterFault(p, f, nodes, bad)
		}
	}
}

// validateClusterFault checks a fault of the cluster (nodes nodes): a limiter that has one, a
// target in the topology, the fields its kind needs and none it does not take.
func (s *Spec) validateClusterFault(p string, f FaultSpec, nodes int, bad badFunc) {
	if !s.NeedsCluster() {
		bad(p+".kind", f.Kind, fmt.Sprintf("faults act on the Redis Cluster; limiter.kind %q has none (use token-bucket or lease)", s.Limiter.Kind))
	}
	if err := checkTarget(f.Target, nodes, s.Tenants.Count); err != "" {
		bad(p+".target", fmt.Sprintf("%q", f.Target), err)
	}
	s.validateFaultFields(p, f, bad)
	if f.Kind != FaultReshard && f.AskWindow != 0 {
		bad(p+".ask_window", time.Duration(f.AskWindow), "only a reshard has an ask window")
	}
	if f.Kind != FaultPause && f.Kind != FaultLatency && f.For != 0 {
		bad(p+".for", time.Duration(f.For), "only pause and latency faults have a length")
	}
	if s.Duration > 0 && f.At+f.For > s.Duration && f.Kind == FaultPause {
		bad(p+".for", time.Duration(f.For), fmt.Sprintf("the pause would outlast the run (ends at %s)", time.Duration(s.Duration)))
	}
}

// validateFaultFields checks the fields a cluster fault's kind needs.
func (s *Spec) validateFaultFields(p string, f FaultSpec, bad badFunc) {
	noReplicas := s.Cluster.Replicas != nil && *s.Cluster.Replicas == 0
	switch f.Kind {
	case FaultPause:
		if f.For <= 0 {
			bad(p+".for", time.Duration(f.For), "a pause needs a length > 0, e.g. for: 3s")
		}
	case FaultLatency:
		if f.Delay <= 0 || f.Delay > Duration(10*time.Second) {
			bad(p+".delay", time.Duration(f.Delay), "must be > 0 and <= 10s, e.g. delay: 5ms")
		}
		if f.Jitter < 0 || f.Jitter > f.Delay {
			bad(p+".jitter", time.Duration(f.Jitter), "must be between 0 and delay")
		}
		if f.For < 0 {
			bad(p+".for", time.Duration(f.For), "must be >= 0 (0 = until the end of the run)")
		}
	case FaultFailover:
		switch f.Mode {
		case "", "default", "force", "takeover":
		default:
			bad(p+".mode", fmt.Sprintf("%q", f.Mode), "use default, force or takeover")
		}
		if noReplicas {
			bad(p+".kind", f.Kind, "a failover needs replicas: set cluster.replicas >= 1")
		}
	case FaultKillPrimary:
		if noReplicas {
			bad(p+".kind", f.Kind, "killing a primary without replicas leaves its slots down for good: set cluster.replicas >= 1")
		}
	case FaultReshard:
		s.validateReshard(p, f, bad)
	}
}

// validateReshard checks a reshard's slots, its two primaries and its ask window.
func (s *Spec) validateReshard(p string, f FaultSpec, bad badFunc) {
	if f.Slots < 1 || f.Slots > 16384 {
		bad(p+".slots", f.Slots, "must be between 1 and 16384")
	}
	for _, e := range []struct{ name, v string }{{"from", f.From}, {"to", f.To}} {
		if !strings.HasPrefix(e.v, "node:") || checkTarget(e.v, s.Cluster.Primaries, 0) != "" {
			bad(p+"."+e.name, fmt.Sprintf("%q", e.v), fmt.Sprintf("name a primary as node:N (0..%d)", s.Cluster.Primaries-1))
		}
	}
	if f.From != "" && f.From == f.To {
		bad(p+".to", fmt.Sprintf("%q", f.To), "must differ from from")
	}
	if f.AskWindow < 0 || f.AskWindow > Duration(time.Second) {
		bad(p+".ask_window", time.Duration(f.AskWindow), "must be between 0 (the default, "+DefaultAskWindow.String()+") and 1s per slot")
	}
}

// checkTarget returns "" for a well-formed target, else what to write instead.
func checkTarget(t string, nodes, tenants int) string {
	const fix = "use hottest, all, killed, node:N, slot:N or primary-of:TENANT"
	switch {
	case t == "" || t == "hottest" || t == "all" || t == "killed":
		return ""
	case strings.HasPrefix(t, "node:"):
		n, err := strconv.Atoi(strings.TrimPrefix(t, "node:"))
		if err != nil || n < 0 || (nodes > 0 && n >= nodes) {
			return fmt.Sprintf("node:N needs 0 <= N < %d (the cluster's nodes, primaries first)", nodes)
		}
	case strings.HasPrefix(t, "slot:"):
		n, err := strconv.Atoi(strings.TrimPrefix(t, "slot:"))
		if err != nil || n < 0 || n > 16383 {
			return "slot:N needs 0 <= N <= 16383"
		}
	case strings.HasPrefix(t, "primary-of:"):
		name := strings.TrimPrefix(t, "primary-of:")
		if name == "" || strings.ContainsAny(name, "{} ") {
			return "primary-of: needs a tenant name such as tenant-0"
		}
		if tenants > 0 && strings.HasPrefix(name, "tenant-") {
			if n, err := strconv.Atoi(strings.TrimPrefix(name, "tenant-")); err != nil || n < 0 || n >= tenants {
				return fmt.Sprintf("no such tenant: tenants are tenant-0 .. tenant-%d", tenants-1)
			}
		}
	default:
		return fix
	}
	return ""
}

// HasFault reports whether the schedule has a fault of kind.
func (s *Spec) HasFault(kind FaultKind) bool {
	for _, f := range s.Faults {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

// validateGatewayFault checks a clock-skew or gateway-kill fault: a gateway target that exists,
// the offset of a skew, and a limiter the fault means something for.
func (s *Spec) validateGatewayFault(p string, f FaultSpec, bad badFunc) {
	g := s.GatewayCount()
	if _, err := GatewayTargets(f.Target, g); err != "" {
		bad(p+".target", fmt.Sprintf("%q", f.Target), err)
	}
	switch f.Kind {
	case FaultClockSkew:
		if o := time.Duration(f.Offset); o == 0 || o < -time.Hour || o > time.Hour {
			bad(p+".offset", o, "a skew needs an offset between -1h and 1h, not 0, e.g. offset: 2s (ahead) or offset: -2s (behind)")
		}
		if f.For < 0 {
			bad(p+".for", time.Duration(f.For), "must be >= 0 (0 = until the end of the run)")
		}
		if s.Limiter.Kind == KindNoop {
			bad(p+".kind", f.Kind, "limiter.kind noop ignores time: a skew changes nothing")
		}
	case FaultGatewayKill:
		if s.Limiter.Kind != KindLease {
			bad(p+".kind", f.Kind, fmt.Sprintf("a gateway's death loses its leases: only limiter.kind lease keeps state in the gateway (kind is %q)", s.Limiter.Kind))
		}
		if f.For != 0 {
			bad(p+".for", time.Duration(f.For), "a gateway-kill is instant (the gateway restarts empty): drop for")
		}
	}
}

// GatewayTargets resolves a gateway fault's target against g simulated gateways: the indices it
// names, or "" and what to write instead.
func GatewayTargets(t string, g int) ([]int, string) {
	fix := fmt.Sprintf("use all, gateway:N (0 <= N < %d) or gateways:K (the first K, 1 <= K <= %d); set limiter.gateways (or limiter.lease.gateways) for more", g, g)
	n := g
	switch {
	case t == "" || t == "all":
	case strings.HasPrefix(t, "gateway:"):
		i, err := strconv.Atoi(strings.TrimPrefix(t, "gateway:"))
		if err != nil || i < 0 || i >= g {
			return nil, fix
		}
		return []int{i}, ""
	case strings.HasPrefix(t, "gateways:"):
		k, err := strconv.Atoi(strings.TrimPrefix(t, "gateways:"))
		if err != nil || k < 1 || k > g {
			return nil, fix
		}
		n = k
	default:
		return nil, fix
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out, ""
}
