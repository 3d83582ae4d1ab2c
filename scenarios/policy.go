package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"ratelab/limiter"
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

// validatePolicy checks the limit itself: tariffs, a limit per window for the window kinds, or a
// bucket (rate and burst, or limit and window read as a bucket) for the others.
func (s *Spec) validatePolicy(bad badFunc) {
	switch {
	case s.HasTariffs():
		s.validateTariffs(bad)
	case s.WindowKind():
		s.validateWindowPolicy(bad)
	default:
		s.validateBucketPolicy(bad)
	}
}

// validateWindowPolicy checks the policy of a window kind: limit and window, nothing else.
func (s *Spec) validateWindowPolicy(bad badFunc) {
	p := s.Policy
	if p.Limit < 1 {
		bad("policy.limit", p.Limit, fmt.Sprintf("limiter.kind %s needs the most requests per window, >= 1", s.Limiter.Kind))
	}
	validateWindow(p.Window, bad)
	if p.Rate != 0 || p.Burst != 0 {
		bad("policy", "rate/burst", fmt.Sprintf("limiter.kind %s takes limit and window, not rate and burst", s.Limiter.Kind))
	}
	if s.HasFailPolicy() {
		bad("limiter.kind", s.Limiter.Kind, "fail policies wrap the token bucket only for now; drop endpoints' fail")
	}
}

// validateBucketPolicy checks the policy of a bucket kind: rate and burst, or limit and window
// read as the same limit as a bucket, so one scenario runs through every algorithm.
func (s *Spec) validateBucketPolicy(bad badFunc) {
	p := s.Policy
	byWindow := p.Limit != 0 || p.Window != 0
	switch {
	case byWindow && (p.Rate != 0 || p.Burst != 0):
		bad("policy", "limit/window", fmt.Sprintf("limiter.kind %s takes rate and burst, or limit and window (read as rate limit/window, burst limit), not both", s.Limiter.Kind))
	case byWindow:
		if p.Limit < 1 {
			bad("policy.limit", p.Limit, "must be >= 1 (with window, it reads as burst limit, rate limit/window)")
		}
		validateWindow(p.Window, bad)
	default:
		if !finitePos(p.Rate) {
			bad("policy.rate", p.Rate, "must be > 0 tokens per second")
		}
		if p.Burst < 1 {
			bad("policy.burst", p.Burst, "must be >= 1 token")
		}
	}
}

// validateWindow checks policy.window.
func validateWindow(window Duration, bad badFunc) {
	if w := time.Duration(window); w < time.Millisecond || w > 24*time.Hour {
		bad("policy.window", w, "must be between 1ms and 24h, e.g. window: 1s")
	}
}

// validateTwoTier checks the two-tier quota: set exactly with kind two-tier (unless tariffs give
// the limits), within bounds, and no fail policy around it.
func (s *Spec) validateTwoTier(bad badFunc) {
	twoTier := s.Limiter.Kind == KindTwoTier
	if q := s.Policy.Quota; q != nil {
		if !twoTier {
			bad("policy.quota", "set", fmt.Sprintf("a quota is the long tier of limiter.kind two-tier (kind is %q): set kind: two-tier or drop the quota", s.Limiter.Kind))
		}
		if q.Limit < 1 || q.Limit > 1<<53 {
			bad("policy.quota.limit", q.Limit, "must be between 1 and 2^53 requests per tenant per window, e.g. limit: 10000")
		}
		if w := time.Duration(q.Window); w < time.Millisecond || w > maxQuotaWindow || w%time.Millisecond != 0 {
			bad("policy.quota.window", w, "must be a whole number of milliseconds between 1ms and 8760h, e.g. window: 24h")
		}
	} else if twoTier && !s.HasTariffs() {
		bad("policy.quota", "missing", "limiter.kind two-tier needs the long tier: policy: {rate: 100, burst: 200, quota: {limit: 10000, window: 24h}}")
	}
	if twoTier && s.HasFailPolicy() {
		bad("limiter.kind", KindTwoTier, "fail policies wrap the token bucket only; drop endpoints' fail or use token-bucket")
	}
}

// validateTariffs checks policy.file / policy.tariffs: one of them, on a limiter that takes a
// policy per tenant endpoint, with no rate, burst, limit or window beside it.
func (s *Spec) validateTariffs(bad badFunc) {
	p := s.Policy
	if p.File != "" && p.Tariffs != nil {
		bad("policy.file", p.File, "give the tariffs either as a file or inline under policy.tariffs, not both")
	}
	if !slices.Contains(tariffKinds, s.Limiter.Kind) {
		bad("limiter.kind", s.Limiter.Kind, "tariffs set a bucket per tenant endpoint: use kind "+orKinds(tariffKinds)+" with policy.file or policy.tariffs")
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
