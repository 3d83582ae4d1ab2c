package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"ratelab/limiter"
)

// tariffsV7 is the documented example.
const tariffsV7 = `version: 7
plans:
  free:  {default: {rate: 10, burst: 20, fail: closed},  endpoints: {search: {rate: 2, burst: 5}}}
  pro:   {default: {rate: 100, burst: 200, fail: open}, quota: {limit: 10000, window: 24h}}
tenants: {tenant-0: pro, tenant-1: free}
default_plan: free
`

// tariffsV8 moves tenant-1 to pro and changes free's search override.
const tariffsV8 = `version: 8
plans:
  free:  {default: {rate: 10, burst: 20, fail: closed},  endpoints: {search: {rate: 3, burst: 6}}}
  pro:   {default: {rate: 100, burst: 200, fail: open}, quota: {limit: 10000, window: 24h}}
tenants: {tenant-0: pro, tenant-1: pro}
default_plan: free
`

func mustTariffs(tb testing.TB, src string) *limiter.Tariffs {
	tb.Helper()
	t, err := limiter.ParseTariffs("t.yaml", []byte(src))
	if err != nil {
		tb.Fatalf("ParseTariffs: %v", err)
	}
	return t
}

func TestParseTariffsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have string
		want []string // the joined messages, one per line
	}{
		{"empty", ``, []string{"t.yaml: empty tariff file: write version, plans and default_plan"}},
		{"unknown field", "version: 1\nplans: {free: {default: {rate: 1, burst: 1, limit: 3}}}\ndefault_plan: free\n",
			[]string{"t.yaml:2: unknown field limit: remove it or fix its spelling"}},
		{"wrong type", "version: seven\nplans: {free: {default: {rate: 1, burst: 1}}}\ndefault_plan: free\n",
			[]string{"t.yaml:1: cannot unmarshal !!str `seven` into int64"}},
		{"missing version and default_plan", "plans: {free: {default: {rate: 1, burst: 1}}}\n", []string{
			"t.yaml: version: missing: set version to a number >= 1 and bump it on every change",
			"t.yaml: default_plan: missing: name the plan of tenants not listed, one of: free",
		}},
		{"version zero", "version: 0\nplans: {free: {default: {rate: 1, burst: 1}}}\ndefault_plan: free\n",
			[]string{"t.yaml:1: version: 0: must be >= 1; bump it on every change"}},
		{"no plans", "version: 1\ndefault_plan: free\n", []string{
			"t.yaml: plans: none: define at least one plan, e.g. free: {default: {rate: 10, burst: 20}}",
			`t.yaml:2: default_plan: "free": no such plan; use one of: `,
		}},
		{"rate and burst", "version: 1\nplans:\n  free: {default: {rate: -1, burst: 0}}\ndefault_plan: free\n", []string{
			"t.yaml:3: plans.free.default.rate: -1: must be a finite number > 0 tokens per second",
			"t.yaml:3: plans.free.default.burst: 0: must be between 1 and 2^53 tokens",
		}},
		{"default without rate and burst", "version: 1\nplans:\n  free:\n    default: {fail: open}\ndefault_plan: free\n", []string{
			"t.yaml:4: plans.free.default.rate: missing: set the refill rate in tokens per second, e.g. rate: 10",
			"t.yaml:4: plans.free.default.burst: missing: set the bucket capacity in tokens, e.g. burst: 20",
		}},
		{"bad fail modes", "version: 1\nplans:\n  free:\n    default: {rate: 1, burst: 1, fail: maybe}\n    endpoints:\n      search: {fail: Closed}\ndefault_plan: free\n", []string{
			`t.yaml:4: plans.free.default.fail: "maybe": use open, closed or local`,
			`t.yaml:6: plans.free.endpoints.search.fail: "Closed": use open, closed or local`,
		}},
		{"endpoint explicit zero rate", "version: 1\nplans:\n  free:\n    default: {rate: 1, burst: 1}\n    endpoints:\n      search:\n        rate: 0\ndefault_plan: free\n",
			[]string{"t.yaml:7: plans.free.endpoints.search.rate: 0: must be a finite number > 0 tokens per second"}},
		{"unknown plan of a tenant", "version: 1\nplans: {free: {default: {rate: 1, burst: 1}}, pro: {default: {rate: 2, burst: 2}}}\ntenants:\n  acme: enterprise\ndefault_plan: free\n",
			[]string{`t.yaml:4: tenants.acme: "enterprise": no such plan; define it under plans or use one of: free, pro`}},
		{"tenant with a brace", "version: 1\nplans: {free: {default: {rate: 1, burst: 1}}}\ntenants: {'a{b': free}\ndefault_plan: free\n",
			[]string{`t.yaml:3: tenants.a{b: "a{b": a tenant must not contain '{' or '}' (the key's hash tag is {tenant})`}},
		{"unknown default plan", "version: 1\nplans: {free: {default: {rate: 1, burst: 1}}}\ndefault_plan: gold\n",
			[]string{`t.yaml:3: default_plan: "gold": no such plan; use one of: free`}},
		{"quota", "version: 1\nplans:\n  pro:\n    default: {rate: 1, burst: 1}\n    quota: {limit: 0, window: 1d}\ndefault_plan: pro\n", []string{
			"t.yaml:5: plans.pro.quota.limit: 0: must be between 1 and 2^53 cost units per window",
			`t.yaml:5: plans.pro.quota.window: "1d": not a duration; write it like 24h, 1h30m or 500ms`,
		}},
		{"quota window not whole ms", "version: 1\nplans:\n  pro:\n    default: {rate: 1, burst: 1}\n    quota: {limit: 5, window: 1500us}\ndefault_plan: pro\n",
			[]string{"t.yaml:5: plans.pro.quota.window: 1.5ms: must be a whole number of milliseconds from 1ms to 305419h53m47.776s"}},
		{"refill too slow", "version: 1\nplans:\n  free: {default: {rate: 0.000001, burst: 9007199254740992}}\ndefault_plan: free\n",
			[]string{"t.yaml:3: plans.free.default: rate 1e-06/s with burst 9007199254740992: refilling takes 9.01e+24 ms, more than 9223372036854; raise the rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := limiter.ParseTariffs("t.yaml", []byte(tt.have))
			if err == nil {
				t.Fatalf("ParseTariffs = %+v, want errors %q", got, tt.want)
			}
			if have, want := err.Error(), strings.Join(tt.want, "\n"); have != want {
				t.Errorf("error:\nhave %s\nwant %s", have, want)
			}
			if !errors.Is(err, limiter.ErrBadConfig) {
				t.Errorf("error %v does not wrap ErrBadConfig", err)
			}
		})
	}
}

func TestTariffsLookup(t *testing.T) {
	t.Parallel()
	tf := mustTariffs(t, tariffsV7)
	free := limiter.Rule{Bucket: limiter.BucketPolicy{Rate: 10, Burst: 20}, Fail: limiter.FailPolicy{Mode: limiter.FailModeClosed}, Plan: "free", Version: 7}
	freeSearch := free
	freeSearch.Bucket = limiter.BucketPolicy{Rate: 2, Burst: 5}
	pro := limiter.Rule{Bucket: limiter.BucketPolicy{Rate: 100, Burst: 200}, QuotaLimit: 10000, QuotaWindow: 24 * time.Hour, Plan: "pro", Version: 7}
	tests := []struct {
		tenant, endpoint string
		want             limiter.Rule
	}{
		{"tenant-1", "search", freeSearch}, // endpoint override beats the plan default
		{"tenant-1", "checkout", free},     // plan default
		{"tenant-0", "search", pro},        // the override belongs to free, not pro
		{"tenant-0", "", pro},
		{"stranger", "search", freeSearch}, // unknown tenant: default_plan, with its overrides
		{"stranger", "checkout", free},
	}
	for _, tt := range tests {
		if have := tf.Lookup(tt.tenant, tt.endpoint); have != tt.want {
			t.Errorf("Lookup(%q, %q):\nhave %+v\nwant %+v", tt.tenant, tt.endpoint, have, tt.want)
		}
	}
	if have, want := tf.Version(), int64(7); have != want {
		t.Errorf("Version = %d, want %d", have, want)
	}
	if have, want := fmt.Sprint(tf.Plans(), " ", tf.DefaultPlan()), "[free pro] free"; have != want {
		t.Errorf("Plans, DefaultPlan = %s, want %s", have, want)
	}
	if tp, ok := tf.Lookup("tenant-0", "x").TwoTier(); !ok || tp.Quota != 10000 || tp.QuotaWindow != 24*time.Hour || tp.Validate() != nil {
		t.Errorf("pro TwoTier = %+v, %v; want a valid quota of 10000/24h", tp, ok)
	}
	if _, ok := tf.Lookup("tenant-1", "x").TwoTier(); ok {
		t.Error("free TwoTier ok = true, want false (no quota)")
	}
}

func TestTariffsOverrideInheritsAndLocal(t *testing.T) {
	t.Parallel()
	tf := mustTariffs(t, "version: 2\nplans:\n  p:\n    default: {rate: 10, burst: 20, fail: local}\n    endpoints: {a: {burst: 3}, b: {fail: closed}}\ndefault_plan: p\n")
	tests := []struct {
		endpoint string
		want     limiter.Rule
	}{
		{"a", limiter.Rule{Bucket: limiter.BucketPolicy{Rate: 10, Burst: 3}, Fail: limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: limiter.DefaultTariffLocalFraction}, Plan: "p", Version: 2}},
		{"b", limiter.Rule{Bucket: limiter.BucketPolicy{Rate: 10, Burst: 20}, Fail: limiter.FailPolicy{Mode: limiter.FailModeClosed}, Plan: "p", Version: 2}},
	}
	for _, tt := range tests {
		have := tf.Lookup("x", tt.endpoint)
		if have != tt.want {
			t.Errorf("Lookup(x, %q):\nhave %+v\nwant %+v", tt.endpoint, have, tt.want)
		}
		if err := have.Fail.Validate(); err != nil {
			t.Errorf("Lookup(x, %q).Fail.Validate: %v", tt.endpoint, err)
		}
	}
}

// writeFile replaces path atomically (temp file + rename), as a tariff publisher should.
func writeFile(tb testing.TB, path, data string) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

// TestPolicyCacheReload: under a fake clock, the reload loop picks up a new version within one
// period, keeps the old one when the file breaks, and recovers when it is fixed.
func TestPolicyCacheReload(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tariffs.yaml")
		writeFile(t, path, tariffsV7)
		var (
			mu      sync.Mutex
			errs    []error
			changes []string
		)
		c, err := limiter.NewPolicyCache(limiter.FileTariffs(path),
			limiter.WithReloadEvery(time.Second),
			limiter.WithOnReloadError(func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }),
			limiter.WithOnChange(func(old, new *limiter.Tariffs) {
				mu.Lock()
				changes = append(changes, fmt.Sprintf("%d->%d", old.Version(), new.Version()))
				mu.Unlock()
			}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("second Start = %v, want ErrBadConfig", err)
		}
		step := func(d time.Duration) { time.Sleep(d); synctest.Wait() }
		check := func(when string, wantVersion int64, wantPlan string, wantErrs int) {
			t.Helper()
			if have := c.Version(); have != wantVersion {
				t.Errorf("%s: Version = %d, want %d", when, have, wantVersion)
			}
			if have := c.Lookup("tenant-1", "checkout").Plan; have != wantPlan {
				t.Errorf("%s: tenant-1 plan = %q, want %q", when, have, wantPlan)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(errs) != wantErrs {
				t.Errorf("%s: %d reload errors (%v), want %d", when, len(errs), errs, wantErrs)
			}
		}

		step(2500 * time.Millisecond) // two unchanged reloads: no change, no error
		check("unchanged", 7, "free", 0)

		writeFile(t, path, tariffsV8)
		step(time.Second)
		check("after v8", 8, "pro", 0)

		writeFile(t, path, "version: 9\nplans: {free: {default: {rate: -5, burst: 1}}}\ndefault_plan: free\n")
		step(time.Second)
		check("broken v9", 8, "pro", 1)
		step(time.Second) // still broken: reported again, still v8
		check("still broken", 8, "pro", 2)
		mu.Lock()
		if have := errs[0].Error(); !strings.Contains(have, "keeping version 8") || !strings.Contains(have, "plans.free.default.rate: -5") {
			t.Errorf("reload error = %q, want it to name the kept version and the bad field", have)
		}
		mu.Unlock()

		writeFile(t, path, strings.Replace(tariffsV7, "version: 7", "version: 10", 1))
		step(time.Second)
		check("fixed v10", 10, "free", 2)
		mu.Lock()
		if have, want := strings.Join(changes, " "), "7->8 8->10"; have != want {
			t.Errorf("OnChange calls = %q, want %q", have, want)
		}
		mu.Unlock()
		cancel()
		synctest.Wait() // the loop goroutine must exit for the bubble to end
	})
}

// TestPolicyCacheReloadOnDemand: Reload applies a new file at once, without waiting for a period.
func TestPolicyCacheReloadOnDemand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tariffs.yaml")
	writeFile(t, path, tariffsV7)
	c, err := limiter.NewPolicyCache(limiter.FileTariffs(path))
	if err != nil {
		t.Fatal(err)
	}
	before := c.Tariffs()
	if err := c.Reload(t.Context()); err != nil || c.Tariffs() != before {
		t.Fatalf("Reload of an unchanged file = %v, swapped %v; want nil, false", err, c.Tariffs() != before)
	}
	writeFile(t, path, tariffsV8)
	if err := c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tenant, endpoint string
		want             limiter.BucketPolicy
	}{
		{"tenant-1", "search", limiter.BucketPolicy{Rate: 100, Burst: 200}}, // moved to pro
		{"tenant-9", "search", limiter.BucketPolicy{Rate: 3, Burst: 6}},     // free's new override
	}
	for _, tt := range tests {
		if have := c.Lookup(tt.tenant, tt.endpoint); have.Bucket != tt.want || have.Version != 8 {
			t.Errorf("Lookup(%q, %q) = %+v, want bucket %+v of version 8", tt.tenant, tt.endpoint, have, tt.want)
		}
	}
	if have := c.FailPolicyFor("tenant-9", "x"); have.Mode != limiter.FailModeClosed {
		t.Errorf("FailPolicyFor(tenant-9) mode = %v, want closed", have.Mode)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(t.Context()); !errors.Is(err, os.ErrNotExist) || c.Version() != 8 {
		t.Errorf("Reload of a removed file = %v, version %d; want ErrNotExist, version 8", err, c.Version())
	}
}

func TestNewPolicyCacheErrors(t *testing.T) {
	t.Parallel()
	ok := func(context.Context) (*limiter.Tariffs, error) { return mustTariffs(t, tariffsV7), nil }
	tests := []struct {
		name string
		load func(context.Context) (*limiter.Tariffs, error)
		opts []limiter.PolicyCacheOption
		want string
	}{
		{"nil loader", nil, nil, "limiter: bad configuration: tariff loader is nil: pass func(ctx) (*Tariffs, error), such as FileTariffs(path)"},
		{"zero period", ok, []limiter.PolicyCacheOption{limiter.WithReloadEvery(0)}, "limiter: bad configuration: reload period 0s: must be > 0, e.g. WithReloadEvery(time.Second)"},
		{"negative timeout", ok, []limiter.PolicyCacheOption{limiter.WithLoadTimeout(-time.Second)}, "limiter: bad configuration: load timeout -1s: must be > 0, e.g. WithLoadTimeout(5*time.Second)"},
		{"no file", limiter.FileTariffs("/nonexistent/tariffs.yaml"), nil, "first tariff load: stat /nonexistent/tariffs.yaml: no such file or directory"},
		{"nil tariffs", func(context.Context) (*limiter.Tariffs, error) { return nil, nil }, nil,
			"limiter: bad configuration: first tariff load returned no tariffs: the loader must return them on its first call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := limiter.NewPolicyCache(tt.load, tt.opts...)
			if err == nil || err.Error() != tt.want {
				t.Errorf("NewPolicyCache = %v, %v; want error %q", c, err, tt.want)
			}
		})
	}
}

// TestPolicyCacheConcurrentLookup: readers never see a torn rule while reloads swap versions.
// Each version's values are derived from its number, so a mix of two versions is detectable.
func TestPolicyCacheConcurrentLookup(t *testing.T) {
	t.Parallel()
	versions := make([]*limiter.Tariffs, 20)
	for i := range versions {
		v := i + 1
		versions[i] = mustTariffs(t, fmt.Sprintf("version: %d\nplans:\n  p: {default: {rate: %d, burst: %d}, endpoints: {e: {burst: %d}}}\ndefault_plan: p\n", v, v, 10*v, 100*v))
	}
	var mu sync.Mutex
	next := 0
	load := func(context.Context) (*limiter.Tariffs, error) {
		mu.Lock()
		defer mu.Unlock()
		t := versions[next%len(versions)]
		next++
		return t, nil
	}
	c, err := limiter.NewPolicyCache(load)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				r := c.Lookup("any", "e")
				if v := r.Version; r.Bucket.Rate != float64(v) || r.Bucket.Burst != 100*v {
					t.Errorf("torn rule %+v", r)
					return
				}
			}
		})
	}
	for range 200 {
		if err := c.Reload(t.Context()); err != nil {
			t.Error(err)
		}
	}
	close(done)
	wg.Wait()
}

// TestTokenBucketFollowsTariffs: a TokenBucket built over the cache's PolicyFunc decides the
// next request with the new plan once a reload swaps it in; the key keeps its stored tokens.
func TestTokenBucketFollowsTariffs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tariffs.yaml")
	writeFile(t, path, tariffsV7)
	c, err := limiter.NewPolicyCache(limiter.FileTariffs(path))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := limiter.NewTokenBucket(limiter.BucketPolicy{Rate: 1, Burst: 1}, limiter.WithPolicyFunc(c.BucketPolicyFunc()))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.UnixMilli(1_700_000_000_000)
	allow := func(at time.Time) limiter.Decision {
		t.Helper()
		d, err := tb.Allow(t.Context(), limiter.Request{Tenant: "tenant-1", Endpoint: "search", Cost: 1, Now: at})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := range 5 { // free's search override: burst 5
		if d := allow(t0); !d.Allowed {
			t.Fatalf("request %d denied within the burst of 5", i)
		}
	}
	if d := allow(t0); d.Allowed {
		t.Fatal("6th request allowed past the free burst of 5")
	}
	writeFile(t, path, tariffsV8) // tenant-1 moves to pro: 100/s, burst 200
	if err := c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	// One second later the empty bucket refilled 100 tokens at pro's rate (2 at free's): one
	// request leaves 99.
	if d := allow(t0.Add(time.Second)); !d.Allowed || d.Remaining != 99 {
		t.Errorf("after the plan change: %+v, want allowed with 99 remaining", d)
	}
}

func BenchmarkPolicyCacheLookup(b *testing.B) {
	c, err := limiter.NewPolicyCache(func(context.Context) (*limiter.Tariffs, error) { return mustTariffs(b, tariffsV7), nil })
	if err != nil {
		b.Fatal(err)
	}
	keys := [][2]string{{"tenant-0", "search"}, {"tenant-1", "search"}, {"stranger", "checkout"}, {"tenant-1", "x"}}
	b.ReportAllocs()
	var sink int64
	i := 0
	for b.Loop() {
		k := keys[i&3]
		sink += c.Lookup(k[0], k[1]).Bucket.Burst
		i++
	}
	if sink == 0 {
		b.Fatal("no lookups")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

func BenchmarkPolicyCacheLookupParallel(b *testing.B) {
	c, err := limiter.NewPolicyCache(func(context.Context) (*limiter.Tariffs, error) { return mustTariffs(b, tariffsV7), nil })
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = c.Lookup("tenant-1", "search")
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

func FuzzParseTariffs(f *testing.F) {
	f.Add([]byte(tariffsV7))
	f.Add([]byte(tariffsV8))
	f.Add([]byte("version: 1\nplans: {p: {default: {rate: 1, burst: 1}, quota: {limit: 1, window: 1ms}}}\ndefault_plan: p\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := limiter.ParseTariffs("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, limiter.ErrBadConfig) {
				t.Fatalf("error %v does not wrap ErrBadConfig", err)
			}
			return
		}
		// A parsed file always answers with a valid rule.
		r := tf.Lookup("any", "any")
		if err := r.Bucket.Validate(); err != nil || r.Fail.Validate() != nil || r.Version < 1 {
			t.Fatalf("Lookup = %+v from a valid file", r)
		}
	})
}
