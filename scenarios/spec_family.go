package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"ratelab/limiter"
)

// Clock modes of limiter.clock.
const (
	// ClockGateway: each decision uses the gateway's now (the request's time), sent to the
	// script; the stored time of a key never moves backwards.
	ClockGateway = "gateway"
	// ClockRedis: the script takes its time from Redis (TIME); gateway clocks do not matter.
	ClockRedis = "redis"
	// ClockSchedule: each decision uses the run's start (truncated to a millisecond) plus the
	// request's intended offset, not the wall clock, and every tenant's requests are decided in
	// schedule order by one worker: a run's decisions then depend only on its schedule, so a
	// recorded run and its replay agree exactly. Latency is still measured on the wall clock.
	ClockSchedule = "schedule"
)

// Transports of limiter.transport (kind token-bucket).
const (
	// TransportPlain: one script call per decision.
	TransportPlain = "plain"
	// TransportCoalesce: decisions coalesced into one pipeline per primary (limiter.CoalescingBucket).
	TransportCoalesce = "coalesce"
)

// maxQuotaWindow bounds policy.quota.window: a year is longer than any quota a tariff sells.
const maxQuotaWindow = 8760 * time.Hour

// BucketPolicy is the bucket of the bucket kinds (token-bucket, gcra, two-tier, lease, memory):
// rate and burst as written, or, for a policy written as limit per window, the same limit as a
// bucket: burst limit, refilled at limit per window.
func (s *Spec) BucketPolicy() limiter.BucketPolicy {
	p := s.Policy
	if p.Rate == 0 && p.Burst == 0 && p.Limit > 0 && p.Window > 0 {
		return limiter.BucketPolicy{Rate: float64(p.Limit) / time.Duration(p.Window).Seconds(), Burst: p.Limit}
	}
	return limiter.BucketPolicy{Rate: p.Rate, Burst: p.Burst}
}

// HasTariffs reports whether the limits come from tariffs (policy.file or policy.tariffs)
// rather than policy.rate and policy.burst.
func (s *Spec) HasTariffs() bool { return s.Policy.File != "" || s.Policy.Tariffs != nil }

// GatewayCount is the number of simulated gateway instances the workers are split across.
func (s *Spec) GatewayCount() int {
	if s.Limiter.Kind == "lease" && s.Limiter.Lease != nil {
		return max(s.Limiter.Lease.Gateways, 1)
	}
	return max(s.Limiter.Gateways, 1)
}

// validateFamily checks the fields of the limiter family beyond one bucket: the two-tier quota,
// the clock mode and the number of simulated gateways.
func (s *Spec) validateFamily(bad func(field string, value any, fix string)) {
	if q := s.Policy.Quota; q != nil {
		if s.Limiter.Kind != "two-tier" {
			bad("policy.quota", "set", fmt.Sprintf("a quota is the long tier of limiter.kind two-tier (kind is %q): set kind: two-tier or drop the quota", s.Limiter.Kind))
		}
		if q.Limit < 1 || q.Limit > 1<<53 {
			bad("policy.quota.limit", q.Limit, "must be between 1 and 2^53 requests per tenant per window, e.g. limit: 10000")
		}
		if w := time.Duration(q.Window); w < time.Millisecond || w > maxQuotaWindow || w%time.Millisecond != 0 {
			bad("policy.quota.window", w, "must be a whole number of milliseconds between 1ms and 8760h, e.g. window: 24h")
		}
	} else if s.Limiter.Kind == "two-tier" && !s.HasTariffs() {
		bad("policy.quota", "missing", "limiter.kind two-tier needs the long tier: policy: {rate: 100, burst: 200, quota: {limit: 10000, window: 24h}}")
	}
	if s.Limiter.Kind == "two-tier" && s.HasFailPolicy() {
		bad("limiter.kind", "two-tier", "fail policies wrap the token bucket only; drop endpoints' fail or use token-bucket")
	}
	switch s.Limiter.Clock {
	case ClockGateway:
	case ClockRedis:
		if s.Limiter.Kind != "token-bucket" {
			bad("limiter.clock", ClockRedis, fmt.Sprintf("only limiter.kind token-bucket takes its time from Redis (kind is %q): use clock: gateway", s.Limiter.Kind))
		}
	case ClockSchedule:
	default:
		bad("limiter.clock", fmt.Sprintf("%q", s.Limiter.Clock), "use gateway (the request's time), redis (TIME inside the script) or schedule (the request's intended time: deterministic replays)")
	}
	switch s.Limiter.Transport {
	case TransportPlain:
	case TransportCoalesce:
		if s.Limiter.Kind != "token-bucket" {
			bad("limiter.transport", TransportCoalesce, fmt.Sprintf("only limiter.kind token-bucket has a coalescing transport (kind is %q; lease fetches are pipelined already): use transport: plain", s.Limiter.Kind))
		}
	default:
		bad("limiter.transport", fmt.Sprintf("%q", s.Limiter.Transport), "use plain (one call per decision) or coalesce (one pipeline per primary)")
	}
	if g := s.GatewayCount(); g > s.Load.Concurrency && s.Load.Concurrency >= 1 {
		bad("load.concurrency", s.Load.Concurrency, fmt.Sprintf("must be at least the number of simulated gateways (%d): each gateway needs a worker", g))
	}
	if g := s.Limiter.Gateways; g != 0 {
		switch {
		case s.Limiter.Kind == "lease":
			bad("limiter.gateways", g, "kind lease counts its gateways in limiter.lease.gateways: move the number there")
		case g < 1 || g > 1024:
			bad("limiter.gateways", g, "must be between 1 and 1024")
		}
	}
}

// validateTariffs checks policy.file / policy.tariffs: one of them, on a limiter that takes a
// policy per tenant endpoint, with no rate, burst, limit or window beside it.
func (s *Spec) validateTariffs(bad func(field string, value any, fix string)) {
	p := s.Policy
	if p.File != "" && p.Tariffs != nil {
		bad("policy.file", p.File, "give the tariffs either as a file or inline under policy.tariffs, not both")
	}
	switch s.Limiter.Kind {
	case "token-bucket", "memory":
	default:
		bad("limiter.kind", s.Limiter.Kind, "tariffs set a bucket per tenant endpoint: use kind token-bucket or memory with policy.file or policy.tariffs")
	}
	if p.Rate != 0 || p.Burst != 0 || p.Limit != 0 || p.Window != 0 || p.Quota != nil {
		bad("policy", "rate/burst/limit/window/quota", "the tariffs give every tenant's limits: drop these fields or drop the tariffs")
	}
	if p.Tariffs != nil {
		if _, err := s.inlineTariffs(); err != nil {
			bad("policy.tariffs", "invalid", err.Error())
		}
	}
}

// inlineTariffs parses policy.tariffs. Line numbers in its errors count from the first line of
// the inline document as re-written by the YAML encoder.
func (s *Spec) inlineTariffs() (*limiter.Tariffs, error) {
	data, err := yaml.Marshal(s.Policy.Tariffs.node)
	if err != nil {
		return nil, fmt.Errorf("cannot re-encode the inline tariffs: %w", err)
	}
	return limiter.ParseTariffs("inline", data)
}

// TariffLoader returns the loader of the spec's tariffs for a limiter.PolicyCache: the file,
// re-read when it changes, or the inline document.
func (s *Spec) TariffLoader() (func(context.Context) (*limiter.Tariffs, error), error) {
	if s.Policy.File != "" {
		return limiter.FileTariffs(s.Policy.File), nil
	}
	t, err := s.inlineTariffs()
	if err != nil {
		return nil, err
	}
	return func(context.Context) (*limiter.Tariffs, error) { return t, nil }, nil
}

// resolveFiles makes a relative policy.file relative to the scenario file's directory (written
// absolute, so the run directory's scenario.yaml still finds it) and parses it once, so a broken
// tariff file is reported with the scenario before anything starts.
func (s *Spec) resolveFiles(scenarioPath string, data []byte) error {
	if s.Policy.File == "" {
		return nil
	}
	if !filepath.IsAbs(s.Policy.File) {
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(scenarioPath), s.Policy.File))
		if err != nil {
			return err
		}
		s.Policy.File = abs
	}
	if _, err := limiter.FileTariffs(s.Policy.File)(context.Background()); err != nil {
		return withLines(scenarioPath, data, &FieldError{Field: "policy.file", Value: s.Policy.File,
			Fix: "cannot load the tariffs: " + strings.ReplaceAll(err.Error(), "\n", "; ")})
	}
	return nil
}
