package scenarios

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"ratelab/cluster"
)

// badFunc reports one invalid field: its path, the value as written and the fix.
type badFunc func(field string, value any, fix string)

// Validate reports every problem at once, each with its field path, the value and the fix.
func (s *Spec) Validate() error {
	var errs []error
	bad := func(field string, value any, fix string) {
		errs = append(errs, &FieldError{Field: field, Value: fmt.Sprint(value), Fix: fix})
	}
	if strings.TrimSpace(s.Name) == "" {
		bad("name", `""`, "give the scenario a name")
	}
	if s.Duration < 0 || (s.Duration > 0 && time.Duration(s.Duration) < time.Second) {
		bad("duration", time.Duration(s.Duration), "must be at least 1s")
	}
	s.validateLoad(bad)
	s.validateTenants(bad)
	s.validateEndpoints(bad)
	s.validateBreaker(bad)
	s.validatePolicy(bad)
	s.validateLimiter(bad)
	s.validateCluster(bad)
	s.validateDurability(bad)
	s.validateFaults(bad)
	s.validateSLO(bad)
	s.validateVia(bad)
	s.validateRegions(bad)
	return errors.Join(errs...)
}

// finitePos reports whether v is a finite number > 0.
func finitePos(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

func (s *Spec) validateLoad(bad badFunc) {
	l := s.Load
	switch {
	case len(l.Stages) > 0:
		s.validateStages(bad)
	case s.Trace != nil:
		// The trace sets the rate.
	case !finitePos(l.Rate):
		bad("load.rate", l.Rate, "must be > 0 requests per second")
	case l.Rate > MaxRate:
		bad("load.rate", l.Rate, "at most 10,000,000 requests per second per generator; use more generators")
	}
	switch l.Pacer {
	case PacerConstant, PacerPoisson:
	default:
		bad("load.pacer", fmt.Sprintf("%q", l.Pacer), "use constant or poisson")
	}
	if l.MaxInflight < 1 || l.MaxInflight > 1_000_000 {
		bad("load.max_inflight", l.MaxInflight, "must be between 1 and 1,000,000")
	}
	if l.Concurrency < 1 || l.Concurrency > 100_000 {
		bad("load.concurrency", l.Concurrency, "must be between 1 and 100,000")
	} else if l.Concurrency > l.MaxInflight && l.MaxInflight >= 1 {
		bad("load.concurrency", l.Concurrency, fmt.Sprintf("must not exceed load.max_inflight (%d)", l.MaxInflight))
	}
}

func (s *Spec) validateTenants(bad badFunc) {
	t := s.Tenants
	if s.Trace != nil && t.Count == 0 {
		// The trace names its tenants.
	} else if t.Count < 1 || t.Count > 100_000_000 {
		bad("tenants.count", t.Count, "must be between 1 and 100,000,000")
	}
	switch t.Distribution {
	case DistZipf:
		if !finitePos(t.Theta) || t.Theta > 10 {
			bad("tenants.theta", t.Theta, "must be > 0 and <= 10 (0.99 is the classic skew)")
		}
	case DistUniform:
	case DistHotspot:
		if !(t.HotShare > 0 && t.HotShare <= 1) {
			bad("tenants.hot_share", t.HotShare, "must be in (0, 1]")
		}
		if t.HotKeys < 1 || t.HotKeys > t.Count {
			bad("tenants.hot_keys", t.HotKeys, fmt.Sprintf("must be between 1 and tenants.count (%d)", t.Count))
		}
	default:
		bad("tenants.distribution", fmt.Sprintf("%q", t.Distribution), "use zipf, uniform or hotspot")
	}
}

func (s *Spec) validateEndpoints(bad badFunc) {
	seen := map[string]bool{}
	for i, e := range s.Endpoints {
		f := fmt.Sprintf("endpoints[%d]", i)
		if e.Name == "" || strings.ContainsAny(e.Name, "{} \t\n") {
			bad(f+".name", fmt.Sprintf("%q", e.Name), "must be non-empty without spaces or braces (it becomes part of a Redis key)")
		} else if seen[e.Name] {
			bad(f+".name", fmt.Sprintf("%q", e.Name), "is listed twice; endpoint names must be unique")
		}
		seen[e.Name] = true
		if !finitePos(e.Weight) {
			bad(f+".weight", e.Weight, "must be > 0")
		}
		switch e.Fail {
		case "", FailOpen, FailClosed, FailLocal:
		default:
			bad(f+".fail", fmt.Sprintf("%q", e.Fail), "use open, closed or local (or leave it out: failures are errors)")
		}
		if b := time.Duration(e.Budget); e.Budget != 0 && (b < 100*time.Microsecond || b > 10*time.Second) {
			bad(f+".budget", b, "must be between 100µs and 10s")
		}
		if e.Fail == FailLocal && !(e.LocalFraction > 0 && e.LocalFraction <= 1) {
			bad(f+".local_fraction", e.LocalFraction, "must be in (0, 1]")
		}
	}
}

func (s *Spec) validateCluster(bad badFunc) {
	c := s.Cluster
	switch c.Provider {
	case ProviderLocal, ProviderRunning, ProviderDocker:
		if c.URL != "" {
			bad("cluster.url", cluster.RedactURL(c.URL), "only provider external takes a URL; set cluster.provider: external or drop cluster.url")
		}
	case ProviderExternal:
		if c.URL == "" {
			bad("cluster.url", `""`, "provider external needs redis://[user@]host:port[,host:port...] (or rediss:// for TLS)")
		} else if _, err := cluster.ParseExternal(c.URL); err != nil {
			bad("cluster.url", cluster.RedactURL(c.URL), err.Error())
		}
	default:
		bad("cluster.provider", fmt.Sprintf("%q", c.Provider), "use "+orKinds(clusterProviders))
	}
	if c.Image != "" && c.Provider != ProviderDocker {
		bad("cluster.image", c.Image, "only provider docker runs an image; set cluster.provider: docker or drop cluster.image")
	}
	if c.Primaries < 1 || c.Primaries > 64 {
		bad("cluster.primaries", c.Primaries, "must be between 1 and 64")
	}
	if r := c.Replicas; r != nil && (*r < 0 || *r > 4) {
		bad("cluster.replicas", *r, "must be between 0 and 4")
	}
	if t := time.Duration(c.NodeTimeout); t < 100*time.Millisecond || t > time.Minute {
		bad("cluster.node_timeout", t, "must be between 100ms and 1m")
	}
}
