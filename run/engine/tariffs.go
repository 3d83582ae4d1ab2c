package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"ratelab/limiter"
	"ratelab/scenarios"
)

// tariffRun is a run's live tariffs: a limiter.PolicyCache reloaded every second (a changed file
// applies within about a second, as on a gateway) and the versions it went through.
type tariffRun struct {
	cache *limiter.PolicyCache
	first int64

	mu      sync.Mutex
	changes []tariffChange
	errs    int
}

type tariffChange struct {
	at       time.Time
	from, to int64
}

// startTariffs loads the spec's tariffs and reloads them until ctx ends.
func startTariffs(ctx context.Context, spec *scenarios.Spec, logf func(string, ...any)) (*tariffRun, error) {
	load, err := spec.TariffLoader()
	if err != nil {
		return nil, fmt.Errorf("policy.tariffs: %w", err)
	}
	tr := &tariffRun{}
	cache, err := limiter.NewPolicyCache(load,
		limiter.WithOnChange(func(old, new *limiter.Tariffs) {
			tr.mu.Lock()
			tr.changes = append(tr.changes, tariffChange{at: time.Now(), from: old.Version(), to: new.Version()})
			tr.mu.Unlock()
			logf("tariffs reloaded: version %d -> %d", old.Version(), new.Version())
		}),
		limiter.WithOnReloadError(func(err error) {
			tr.mu.Lock()
			tr.errs++
			tr.mu.Unlock()
			logf("%v", err)
		}))
	if err != nil {
		field := "policy.tariffs"
		if spec.Policy.File != "" {
			field = "policy.file " + spec.Policy.File
		}
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	tr.cache, tr.first = cache, cache.Version()
	if err := cache.Start(ctx); err != nil {
		return nil, err
	}
	return tr, nil
}

// note says which tariff versions the run used and when they changed (seconds since base).
func (tr *tariffRun) note(base time.Time) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "tariffs: version %d at the start", tr.first)
	for _, c := range tr.changes {
		fmt.Fprintf(&b, ", version %d from t=%.1fs", c.to, c.at.Sub(base).Seconds())
	}
	if tr.errs > 0 {
		fmt.Fprintf(&b, ", %d failed reloads (the last good version stayed live)", tr.errs)
	}
	if len(tr.changes) > 0 {
		b.WriteString("; the check.Checker judges each key by the rule live at its first decision")
	}
	return b.String()
}

// versionAt returns the version of the tariffs that was live at t: the last change recorded at
// or before t. A row is written after its second ends, so every change inside the second has
// been recorded by then; reading the cache's current version instead would also count a reload
// that happened while the row waited for its last decisions.
func (tr *tariffRun) versionAt(t time.Time) int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	v := tr.first
	for _, c := range tr.changes {
		if c.at.After(t) {
			break
		}
		v = c.to
	}
	return v
}

// startTariffs loads the spec's tariffs, keeps them reloading until Close, and makes the
// tariff of the first tenant's first endpoint the policy a plain bucket starts from.
func (s *Session) startTariffs(ctx context.Context) error {
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.onClose(func() error { cancel(); return nil })
	tr, err := startTariffs(bg, s.Spec, s.logf)
	if err != nil {
		return err
	}
	s.tariffs = tr
	s.policy = tr.cache.Lookup(s.Tenants[0], s.Endpoints[0]).Bucket
	return nil
}
