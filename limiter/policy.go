package limiter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults of a PolicyCache and of tariff files.
const (
	// DefaultReloadEvery is how often PolicyCache.Start reloads the tariffs: a tariff change
	// applies within about one second on every gateway.
	DefaultReloadEvery = time.Second
	// DefaultLoadTimeout bounds one call of a PolicyCache's loader, the first one included.
	DefaultLoadTimeout = 5 * time.Second
	// DefaultTariffLocalFraction is the FailPolicy.LocalFraction of a rule whose fail mode is
	// "local": its emergency bucket runs at half the rule's rate and burst.
	DefaultTariffLocalFraction = 0.5
)

// Rule is what a tariff says about one tenant's endpoint.
type Rule struct {
	// Bucket is the short-tier token bucket of the endpoint.
	Bucket BucketPolicy
	// Fail carries the endpoint's fail mode only (Budget 0: the limiter's own timeout;
	// LocalFraction DefaultTariffLocalFraction when the mode is local).
	Fail FailPolicy
	// QuotaLimit is the plan's long quota in cost units per QuotaWindow per tenant; 0 = no quota.
	QuotaLimit int64
	// QuotaWindow is the quota's window, e.g. 24h; 0 = no quota.
	QuotaWindow time.Duration
	// Plan is the name of the tenant's plan.
	Plan string
	// Version is the version of the tariffs the rule comes from.
	Version int64
}

// TwoTier returns the rule as a TwoTierPolicy, and false when the plan has no quota.
func (r Rule) TwoTier() (TwoTierPolicy, bool) {
	if r.QuotaLimit == 0 {
		return TwoTierPolicy{}, false
	}
	return TwoTierPolicy{Bucket: r.Bucket, Quota: r.QuotaLimit, QuotaWindow: r.QuotaWindow}, true
}

// Tariffs is one immutable, validated version of a tariff file: plans, the tenants' plans and
// the plan of every other tenant. Build it with ParseTariffs. A file looks like this:
//
//	version: 7            # >= 1; bump it on every change
//	plans:
//	  free:  {default: {rate: 10, burst: 20, fail: closed},  endpoints: {search: {rate: 2, burst: 5}}}
//	  pro:   {default: {rate: 100, burst: 200, fail: open}, quota: {limit: 10000, window: 24h}}
//	tenants: {tenant-0: pro, tenant-1: free}
//	default_plan: free    # the plan of tenants not listed
//
// rate is in tokens per second (> 0), burst in tokens (>= 1), fail one of open (the default),
// closed or local. An endpoint override may leave out rate, burst or fail: the missing ones come
// from the plan's default. quota is optional: limit in cost units (1..2^53) per window (a Go
// duration, a whole number of milliseconds). Lookup and the other methods are safe for concurrent
// use: a Tariffs never changes after ParseTariffs.
type Tariffs struct {
	version     int64
	defaultPlan *tariffPlan
	plans       map[string]*tariffPlan
	tenants     map[string]*tariffPlan
}

// tariffPlan is one plan resolved into Rules: its default and its endpoint overrides.
type tariffPlan struct {
	def       Rule
	endpoints map[string]Rule
}

// Lookup returns the rule of tenant's endpoint: the endpoint override of the tenant's plan, else
// that plan's default; a tenant not listed has default_plan. It takes two map lookups and
// allocates nothing.
func (t *Tariffs) Lookup(tenant, endpoint string) Rule {
	p := t.tenants[tenant]
	if p == nil {
		p = t.defaultPlan
	}
	if r, ok := p.endpoints[endpoint]; ok {
		return r
	}
	return p.def
}

// Version returns the file's version.
func (t *Tariffs) Version() int64 { return t.version }

// DefaultPlan returns the name of the plan of tenants the file does not list.
func (t *Tariffs) DefaultPlan() string { return t.defaultPlan.def.Plan }

// Plans returns the plans' names, sorted.
func (t *Tariffs) Plans() []string {
	names := make([]string, 0, len(t.plans))
	for n := range t.plans {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// tariffFile, tariffPlanFile, tariffLimitFile and tariffQuotaFile are the YAML as written.
// Pointers tell a field left out from a zero written on purpose.
type tariffFile struct {
	Version     *int64                    `yaml:"version"`
	Plans       map[string]tariffPlanFile `yaml:"plans"`
	Tenants     map[string]string         `yaml:"tenants"`
	DefaultPlan string                    `yaml:"default_plan"`
}

type tariffPlanFile struct {
	Default   tariffLimitFile            `yaml:"default"`
	Endpoints map[string]tariffLimitFile `yaml:"endpoints"`
	Quota     *tariffQuotaFile           `yaml:"quota"`
}

type tariffLimitFile struct {
	Rate  *float64 `yaml:"rate"`
	Burst *int64   `yaml:"burst"`
	Fail  *string  `yaml:"fail"`
}

type tariffQuotaFile struct {
	Limit  *int64  `yaml:"limit"`
	Window *string `yaml:"window"`
}

// TariffError is one problem of a tariff file: where (File, Line: 0 when unknown), which field
// (a path such as "plans.free.endpoints.search.rate"), its value and the fix. It wraps
// ErrBadConfig.
type TariffError struct {
	File  string
	Line  int
	Field string
	Value string
	Fix   string
}

func (e *TariffError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	if e.Value != "" {
		b.WriteString(": " + e.Value)
	}
	b.WriteString(": " + e.Fix)
	return b.String()
}

// Unwrap returns ErrBadConfig.
func (e *TariffError) Unwrap() error { return ErrBadConfig }

// yamlTypeErr matches one message of a yaml.TypeError ("line 3: field x not found in type ...").
var yamlTypeErr = regexp.MustCompile(`^line (\d+): (.*)$`)

// ParseTariffs decodes a tariff file strictly and validates it, reporting every problem at once
// (errors.Join of *TariffError, each wrapping ErrBadConfig). name (a file name) prefixes the
// messages: "tariffs.yaml:4: plans.free.default.rate: -1: must be a finite number > 0 tokens per
// second".
func ParseTariffs(name string, data []byte) (*Tariffs, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f tariffFile
	if err := dec.Decode(&f); err != nil {
		return nil, decodeError(name, err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	v := tariffValidator{name: name, root: &root}
	t := v.build(&f)
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeError turns a YAML decoding error into TariffErrors that do not name Go types.
func decodeError(name string, err error) error {
	if errors.Is(err, io.EOF) {
		return &TariffError{File: name, Fix: "empty tariff file: write version, plans and default_plan"}
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return &TariffError{File: name, Fix: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []error
	for _, msg := range te.Errors {
		e := &TariffError{File: name, Fix: msg}
		if m := yamlTypeErr.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Fix = m[2]
		}
		if i := strings.Index(e.Fix, " in type limiter."); i >= 0 {
			e.Fix = e.Fix[:i]
		}
		if strings.HasPrefix(e.Fix, "field ") && strings.HasSuffix(e.Fix, " not found") {
			e.Fix = "unknown " + strings.TrimSuffix(e.Fix, " not found") + ": remove it or fix its spelling"
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// tariffValidator collects every problem of a file while resolving it into Tariffs.
type tariffValidator struct {
	name string
	root *yaml.Node
	errs []error
}

func (v *tariffValidator) bad(field string, value any, fix string) {
	v.errs = append(v.errs, &TariffError{File: v.name, Line: tariffLine(v.root, field), Field: field, Value: fmt.Sprint(value), Fix: fix})
}

// build validates f and resolves it; the result is meaningful only when v.errs is empty.
func (v *tariffValidator) build(f *tariffFile) *Tariffs {
	t := &Tariffs{plans: make(map[string]*tariffPlan, len(f.Plans)), tenants: make(map[string]*tariffPlan, len(f.Tenants))}
	if f.Version == nil {
		v.bad("version", "missing", "set version to a number >= 1 and bump it on every change")
	} else if t.version = *f.Version; t.version < 1 {
		v.bad("version", t.version, "must be >= 1; bump it on every change")
	}
	names := sortedKeys(f.Plans)
	if len(names) == 0 {
		v.bad("plans", "none", "define at least one plan, e.g. free: {default: {rate: 10, burst: 20}}")
	}
	for _, n := range names {
		t.plans[n] = v.plan(n, f.Plans[n], t.version)
	}
	known := strings.Join(names, ", ")
	for _, tenant := range sortedKeys(f.Tenants) {
		plan := f.Tenants[tenant]
		field := "tenants." + tenant
		if strings.ContainsAny(tenant, "{}") {
			v.bad(field, strconv.Quote(tenant), "a tenant must not contain '{' or '}' (the key's hash tag is {tenant})")
		}
		if p := t.plans[plan]; p != nil {
			t.tenants[tenant] = p
		} else {
			v.bad(field, strconv.Quote(plan), "no such plan; define it under plans or use one of: "+known)
		}
	}
	switch p := t.plans[f.DefaultPlan]; {
	case f.DefaultPlan == "":
		v.bad("default_plan", "missing", "name the plan of tenants not listed, one of: "+known)
	case p == nil:
		v.bad("default_plan", strconv.Quote(f.DefaultPlan), "no such plan; use one of: "+known)
	default:
		t.defaultPlan = p
	}
	return t
}

// plan validates and resolves one plan.
func (v *tariffValidator) plan(name string, pf tariffPlanFile, version int64) *tariffPlan {
	at := "plans." + name
	def := Rule{Plan: name, Version: version}
	v.limit(at+".default", pf.Default, &def, true)
	if q := pf.Quota; q != nil {
		v.quota(at+".quota", q, &def)
	}
	p := &tariffPlan{def: def, endpoints: make(map[string]Rule, len(pf.Endpoints))}
	for _, ep := range sortedKeys(pf.Endpoints) {
		r := def
		v.limit(at+".endpoints."+ep, pf.Endpoints[ep], &r, false)
		p.endpoints[ep] = r
	}
	return p
}

// limit applies lf over r. A plan default must give rate and burst; an override inherits them.
func (v *tariffValidator) limit(at string, lf tariffLimitFile, r *Rule, required bool) {
	ok := true
	switch {
	case lf.Rate != nil:
		r.Bucket.Rate = *lf.Rate
		if !(r.Bucket.Rate > 0) || math.IsInf(r.Bucket.Rate, 0) {
			v.bad(at+".rate", r.Bucket.Rate, "must be a finite number > 0 tokens per second")
			ok = false
		}
	case required:
		v.bad(at+".rate", "missing", "set the refill rate in tokens per second, e.g. rate: 10")
		ok = false
	}
	switch {
	case lf.Burst != nil:
		r.Bucket.Burst = *lf.Burst
		if r.Bucket.Burst < 1 || r.Bucket.Burst > 1<<53 {
			v.bad(at+".burst", r.Bucket.Burst, "must be between 1 and 2^53 tokens")
			ok = false
		}
	case required:
		v.bad(at+".burst", "missing", "set the bucket capacity in tokens, e.g. burst: 20")
		ok = false
	}
	if ok && (lf.Rate != nil || lf.Burst != nil) {
		if err := checkPolicy(r.Bucket); err != nil {
			v.bad(at, "", strings.TrimPrefix(err.Error(), ErrBadConfig.Error()+": policy "))
		}
	}
	if lf.Fail != nil {
		m, err := ParseFailMode(*lf.Fail)
		if err != nil {
			v.bad(at+".fail", strconv.Quote(*lf.Fail), "use open, closed or local")
			return
		}
		r.Fail = FailPolicy{Mode: m}
		if m == FailModeLocal {
			r.Fail.LocalFraction = DefaultTariffLocalFraction
		}
	}
}

// quota validates a plan's quota and sets it on the plan's default rule.
func (v *tariffValidator) quota(at string, q *tariffQuotaFile, r *Rule) {
	switch {
	case q.Limit == nil:
		v.bad(at+".limit", "missing", "set the quota in cost units per window, e.g. limit: 10000")
	case *q.Limit < 1 || *q.Limit > 1<<53:
		v.bad(at+".limit", *q.Limit, "must be between 1 and 2^53 cost units per window")
	default:
		r.QuotaLimit = *q.Limit
	}
	if q.Window == nil {
		v.bad(at+".window", "missing", "set the quota's window as a duration, e.g. window: 24h")
		return
	}
	w, err := time.ParseDuration(*q.Window)
	if err != nil {
		v.bad(at+".window", strconv.Quote(*q.Window), "not a duration; write it like 24h, 1h30m or 500ms")
		return
	}
	if err := checkWindow(w); err != nil {
		v.bad(at+".window", w, strings.TrimPrefix(err.Error(), "window "+w.String()+": "))
		return
	}
	r.QuotaWindow = w
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tariffLine returns the line where a field path ("plans.free.default.rate") is written, or that
// of its nearest written parent; 0 when nothing of it is written. A name holding a dot resolves
// to its parent's line.
func tariffLine(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		var next *yaml.Node
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					next, line = n.Content[i+1], n.Content[i].Line
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// PolicyCache holds the live Tariffs of a gateway: Lookup reads them lock-free from an atomic
// pointer, and Reload or the loop of Start swap in the loader's newer version. It is the seed's
// "rules from a config service, cached briefly, invalidated when a tariff changes": no request
// reads the configuration store, and a change applies within one reload period.
//
// A failed reload keeps the last good tariffs (a broken file or an unreachable service never
// leaves a gateway without limits) and reports the error to WithOnReloadError. Reloads are
// serialized. PolicyCache is safe for concurrent use.
type PolicyCache struct {
	cur         atomic.Pointer[Tariffs]
	load        func(ctx context.Context) (*Tariffs, error)
	every       time.Duration
	loadTimeout time.Duration
	onErr       func(error)
	onChange    func(old, new *Tariffs)
	mu          sync.Mutex // serializes loads, swaps and OnChange calls
	started     atomic.Bool
}

// PolicyCacheOption configures a PolicyCache built by NewPolicyCache.
type PolicyCacheOption func(*PolicyCache)

// WithReloadEvery sets the period of Start's reloads (default DefaultReloadEvery); > 0.
func WithReloadEvery(d time.Duration) PolicyCacheOption { return func(c *PolicyCache) { c.every = d } }

// WithLoadTimeout bounds each call of the loader (default DefaultLoadTimeout); > 0.
func WithLoadTimeout(d time.Duration) PolicyCacheOption {
	return func(c *PolicyCache) { c.loadTimeout = d }
}

// WithOnReloadError calls f with the error of each failed reload (the old tariffs stay live).
// f runs on the reloading goroutine, under the reload lock: it must not call Reload.
func WithOnReloadError(f func(error)) PolicyCacheOption { return func(c *PolicyCache) { c.onErr = f } }

// WithOnChange calls f(old, new) after each reload that swapped in new tariffs. Same rules as
// WithOnReloadError.
func WithOnChange(f func(old, new *Tariffs)) PolicyCacheOption {
	return func(c *PolicyCache) { c.onChange = f }
}

// NewPolicyCache loads the tariffs once with load (bounded by the load timeout) and returns a
// cache serving them; it fails when that first load fails, since a gateway without tariffs has
// nothing to enforce. load returns the current tariffs; it may return the same pointer or nil
// with a nil error to say "not modified" (as FileTariffs does), which is not a change.
func NewPolicyCache(load func(ctx context.Context) (*Tariffs, error), opts ...PolicyCacheOption) (*PolicyCache, error) {
	if load == nil {
		return nil, fmt.Errorf("%w: tariff loader is nil: pass func(ctx) (*Tariffs, error), such as FileTariffs(path)", ErrBadConfig)
	}
	c := &PolicyCache{load: load, every: DefaultReloadEvery, loadTimeout: DefaultLoadTimeout}
	for _, o := range opts {
		o(c)
	}
	if c.every <= 0 {
		return nil, fmt.Errorf("%w: reload period %v: must be > 0, e.g. WithReloadEvery(time.Second)", ErrBadConfig, c.every)
	}
	if c.loadTimeout <= 0 {
		return nil, fmt.Errorf("%w: load timeout %v: must be > 0, e.g. WithLoadTimeout(5*time.Second)", ErrBadConfig, c.loadTimeout)
	}
	t, err := c.callLoad(context.Background())
	if err != nil {
		return nil, fmt.Errorf("first tariff load: %w", err)
	}
	if t == nil {
		return nil, fmt.Errorf("%w: first tariff load returned no tariffs: the loader must return them on its first call", ErrBadConfig)
	}
	c.cur.Store(t)
	return c, nil
}

func (c *PolicyCache) callLoad(ctx context.Context) (*Tariffs, error) {
	ctx, cancel := context.WithTimeout(ctx, c.loadTimeout)
	defer cancel()
	return c.load(ctx)
}

// Reload loads the tariffs now and swaps them in if they are new. On failure the old tariffs stay
// live, the error goes to WithOnReloadError and is returned.
func (c *PolicyCache) Reload(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.callLoad(ctx)
	if err != nil {
		err = fmt.Errorf("tariff reload (keeping version %d): %w", c.cur.Load().version, err)
		if c.onErr != nil {
			c.onErr(err)
		}
		return err
	}
	old := c.cur.Load()
	if t == nil || t == old {
		return nil
	}
	c.cur.Store(t)
	if c.onChange != nil {
		c.onChange(old, t)
	}
	return nil
}

// Start reloads the tariffs every reload period on a goroutine of its own until ctx is done. It
// returns an error if the cache was started before.
func (c *PolicyCache) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: policy cache already started: call Start once", ErrBadConfig)
	}
	go func() {
		tick := time.NewTicker(c.every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = c.Reload(ctx) // reported through WithOnReloadError
			}
		}
	}()
	return nil
}

// Tariffs returns the live tariffs.
func (c *PolicyCache) Tariffs() *Tariffs { return c.cur.Load() }

// Version returns the live tariffs' version.
func (c *PolicyCache) Version() int64 { return c.cur.Load().version }

// Lookup returns the live rule of tenant's endpoint (Tariffs.Lookup): one atomic load and two
// map lookups, no lock and no allocation. The tariffs are immutable, so no per-tenant cache
// is needed in front of them.
func (c *PolicyCache) Lookup(tenant, endpoint string) Rule {
	return c.cur.Load().Lookup(tenant, endpoint)
}

// BucketPolicyFunc returns a PolicyFunc over the live tariffs, for WithPolicyFunc on a
// TokenBucket or a RedisTokenBucket: each decision uses the rule live at that moment.
func (c *PolicyCache) BucketPolicyFunc() PolicyFunc {
	return func(tenant, endpoint string) BucketPolicy { return c.Lookup(tenant, endpoint).Bucket }
}

// FailPolicyFor returns the live fail policy of tenant's endpoint (mode only; see Rule.Fail).
func (c *PolicyCache) FailPolicyFor(tenant, endpoint string) FailPolicy {
	return c.Lookup(tenant, endpoint).Fail
}

// FileTariffs returns a loader for NewPolicyCache that reads and parses the tariff file at path.
// It re-reads the file only when its size, modification time or identity (a new file renamed
// over it) changed; otherwise it returns its previous result: the same *Tariffs (not a change
// for the cache) or the same parse error. A writer should replace the file atomically (write a
// temporary file, then rename): a file caught half-written fails to parse, keeps the old tariffs,
// and is read again once it changes. The loader is safe for concurrent use.
func FileTariffs(path string) func(ctx context.Context) (*Tariffs, error) {
	var (
		mu   sync.Mutex
		last os.FileInfo
		t    *Tariffs
		err  error
	)
	return func(ctx context.Context) (*Tariffs, error) {
		if e := ctx.Err(); e != nil {
			return nil, e
		}
		mu.Lock()
		defer mu.Unlock()
		fi, statErr := os.Stat(path)
		if statErr != nil {
			return nil, statErr
		}
		if last != nil && os.SameFile(last, fi) && fi.Size() == last.Size() && fi.ModTime().Equal(last.ModTime()) {
			return t, err
		}
		data, readErr := os.ReadFile(path)
		if readErr != nil {
			return nil, readErr
		}
		last = fi
		t, err = ParseTariffs(path, data)
		return t, err
	}
}
