package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// daemonKinds are the faults of a gubernator daemon (target daemon:N, limiter.kind gubernator).
var daemonKinds = []FaultKind{FaultKill, FaultPause, FaultPartition}

// OnDaemon reports whether the fault acts on a daemon of kind gubernator's cluster (target
// daemon:N), not on a Redis Cluster or the gateways.
func (f FaultSpec) OnDaemon() bool { return strings.HasPrefix(f.Target, "daemon:") }

// DaemonIndex is N of target daemon:N; ok is false for any other target.
func DaemonIndex(t string) (n int, ok bool) {
	s, found := strings.CutPrefix(t, "daemon:")
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// validateDaemonFault checks a fault of a gubernator run's cluster: a kill, pause or partition
// of one daemon named daemon:N among limiter.gubernator.daemons, with a length that ends inside
// the run, and none of the Redis faults' fields.
func (s *Spec) validateDaemonFault(p string, f FaultSpec, bad badFunc) {
	daemons := DefaultGubernatorDaemons
	if g := s.Limiter.Gubernator; g != nil && g.Daemons > 0 {
		daemons = g.Daemons
	}
	if s.Limiter.Kind != KindGubernator {
		bad(p+".target", fmt.Sprintf("%q", f.Target), fmt.Sprintf("daemon:N names a gubernator daemon; limiter.kind %q has a Redis Cluster: use hottest, node:N, slot:N or primary-of:TENANT", s.Limiter.Kind))
		return
	}
	switch n, ok := DaemonIndex(f.Target); {
	case !f.OnDaemon():
		bad(p+".target", fmt.Sprintf("%q", f.Target), fmt.Sprintf("limiter.kind gubernator has no Redis Cluster: name a daemon as daemon:N (0 <= N < %d, limiter.gubernator.daemons)", daemons))
	case !ok || n >= daemons:
		bad(p+".target", fmt.Sprintf("%q", f.Target), fmt.Sprintf("daemon:N needs 0 <= N < %d (limiter.gubernator.daemons)", daemons))
	}
	if !slices.Contains(daemonKinds, f.Kind) {
		bad(p+".kind", f.Kind, "a gubernator daemon's faults are kill (restarted after for), pause and partition (cut off its peers)")
		return
	}
	if f.Kind == FaultPartition && daemons < 2 {
		bad(p+".kind", f.Kind, "a partition cuts a daemon off its peers: set limiter.gubernator.daemons >= 2")
	}
	if f.For <= 0 {
		bad(p+".for", time.Duration(f.For), fmt.Sprintf("a %s of a daemon ends after its length: give one > 0, e.g. for: 2s", f.Kind))
	} else if s.Duration > 0 && f.At+f.For > s.Duration {
		bad(p+".for", time.Duration(f.For), fmt.Sprintf("the %s would outlast the run (ends at %s): end it inside the run so its recovery is measured", f.Kind, time.Duration(s.Duration)))
	}
	onlyAtTargetFor(p, f, fmt.Sprintf("a %s of a daemon", f.Kind), bad)
}
