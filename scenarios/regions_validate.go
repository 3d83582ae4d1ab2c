package scenarios

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// regionDesigns are the values of regions.design.
var regionDesigns = []string{DesignGlobal, DesignSplit, DesignRebalance, DesignIndependent}

// Bounds of a multi-region run.
const (
	minRegions = 3
	maxRegions = 16
	maxRTT     = 10 * time.Second
	minPeriod  = 10 * time.Millisecond
)

// validateRegions checks regions: the designs, the list, the round trip and period, and what
// the rest of the spec must be for the designs to mean what they say: the central token bucket
// (the designs share its quota), in process (each request's region picks its gateway), no
// tariffs (a region's quota is a share of the one policy), and clusters ratelab starts on this
// machine where a design starts one per region.
func (s *Spec) validateRegions(bad badFunc) {
	r := s.Regions
	if r == nil {
		return
	}
	if !containsString(regionDesigns, r.Design) {
		bad("regions.design", fmt.Sprintf("%q", r.Design), "use global (one cluster in the first region), split (a fixed share of each quota per region), rebalance (shares follow demand every period) or independent (the full quota in every region: the naive baseline)")
	}
	s.validateRegionList(bad)
	if rtt := time.Duration(r.RTT); rtt < 0 || rtt > maxRTT {
		bad("regions.rtt", rtt, "must be between 0 and 10s (each direction holds half)")
	}
	if j := time.Duration(r.Jitter); j < 0 || j > maxRTT {
		bad("regions.jitter", j, "must be between 0 and 10s")
	}
	p := time.Duration(r.Period)
	switch {
	case r.Design == DesignRebalance && (p < minPeriod || p > time.Duration(s.Duration)):
		bad("regions.period", p, fmt.Sprintf("the rebalance period must be between 10ms and the run's duration (%s)", time.Duration(s.Duration)))
	case r.Design != DesignRebalance && p != 0:
		bad("regions.period", p, fmt.Sprintf("only design rebalance has a period (design is %q); drop regions.period", r.Design))
	}
	if b := time.Duration(r.Budget); b < 0 || b > maxRTT {
		bad("regions.budget", b, "must be between 0 (the default: limiter.timeout) and 10s")
	}
	if math.IsNaN(r.Affinity) || r.Affinity < 0 || r.Affinity > 1 {
		bad("regions.affinity", r.Affinity, "must be in [0, 1]: the share of a tenant's requests from its home region")
	}
	s.validateRegionFit(bad)
}

// validateRegionList checks the regions' names and shares.
func (s *Spec) validateRegionList(bad badFunc) {
	r := s.Regions
	if n := len(r.List); n < minRegions || n > maxRegions {
		bad("regions.list", fmt.Sprintf("%d regions", n), "list between 3 and 16 regions, each {name, share}")
	}
	seen := map[string]bool{}
	given := 0
	for i, g := range r.List {
		f := fmt.Sprintf("regions.list[%d]", i)
		if g.Name == "" || strings.ContainsAny(g.Name, " \t\n,:") {
			bad(f+".name", fmt.Sprintf("%q", g.Name), "must be non-empty without spaces, commas or colons")
		} else if seen[g.Name] {
			bad(f+".name", fmt.Sprintf("%q", g.Name), "is listed twice; region names must be unique")
		}
		seen[g.Name] = true
		if g.Share != 0 {
			given++
		}
		if g.Share != 0 && !finitePos(g.Share) {
			bad(f+".share", g.Share, "must be > 0 (or leave every share out: equal shares)")
		}
	}
	if given > 0 && given < len(r.List) {
		for i, g := range r.List {
			if g.Share == 0 {
				bad(fmt.Sprintf("regions.list[%d].share", i), 0, "give every region a share > 0, or none (equal shares)")
			}
		}
	}
}

// validateRegionFit checks the rest of the spec against the regions.
func (s *Spec) validateRegionFit(bad badFunc) {
	r := s.Regions
	if s.Limiter.Kind != KindTokenBucket {
		bad("limiter.kind", s.Limiter.Kind, "regions share the central token bucket's quota: use limiter.kind token-bucket")
	}
	if s.Via != "" && s.Via != ViaProcess {
		bad("via", s.Via, "regions pick each request's gateway in process: use via: process")
	}
	if s.HasTariffs() {
		bad("policy", "tariffs", "regions split the one policy (rate, burst) between them: give policy.rate and policy.burst instead of tariffs")
	}
	if s.Tenants.Count > MaxRegionTenants {
		bad("tenants.count", s.Tenants.Count, "at most 1,000,000 with regions (the rebalance design keeps a share per tenant and region)")
	}
	switch {
	case r.Design != DesignGlobal && s.Cluster.Provider != ProviderLocal:
		bad("cluster.provider", s.Cluster.Provider, fmt.Sprintf("design %s starts one cluster per region on this machine: use cluster.provider local", r.Design))
	case s.Cluster.Provider == ProviderExternal:
		bad("cluster.provider", s.Cluster.Provider, "the regions reach the cluster through loopback forwarders: use local, running or docker")
	}
	if r.Design == DesignGlobal && time.Duration(s.Limiter.Timeout) <= time.Duration(r.RTT)+2*time.Duration(r.Jitter) {
		bad("limiter.timeout", time.Duration(s.Limiter.Timeout), fmt.Sprintf("in design global a remote region's every decision takes a round trip (rtt %s ± 2 x jitter %s): set limiter.timeout above that",
			time.Duration(r.RTT), time.Duration(r.Jitter)))
	}
}

// containsString reports whether v is one of vs.
func containsString(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}
