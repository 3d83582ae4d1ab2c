package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"ratelab/limiter"
	"ratelab/scenarios"
	"ratelab/scenarios/check"
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

// newEnvelope builds the overspend checker that matches the spec's limiter: both tiers for
// two-tier, "at most limit in any window" for the window kinds, each tenant's own bucket under
// tariffs, and the one policy's bucket otherwise.
func newEnvelope(spec *scenarios.Spec, tenants, endpoints []string, policy limiter.BucketPolicy, tariffs *tariffRun) check.Checker {
	keys := len(tenants) * len(endpoints)
	switch {
	case spec.Limiter.Kind == "two-tier":
		q := spec.Policy.Quota
		return check.NewTwoTier(len(tenants), len(endpoints), policy, q.Limit, time.Duration(q.Window).Milliseconds())
	case spec.WindowKind():
		return check.NewWindow(keys, spec.Policy.Limit, time.Duration(spec.Policy.Window).Milliseconds())
	case tariffs != nil:
		nEp := len(endpoints)
		return check.NewBucket(keys, func(key int) limiter.BucketPolicy {
			return tariffs.cache.Lookup(tenants[key/nEp], endpoints[key%nEp]).Bucket
		})
	}
	return check.NewBucket(keys, func(int) limiter.BucketPolicy { return policy })
}
