package limiter

import (
	"slices"
	"time"
)

// DefaultTariffLocalFraction is the FailPolicy.LocalFraction of a rule whose fail mode is
// "local": its emergency bucket runs at half the rule's rate and burst.
const DefaultTariffLocalFraction = 0.5

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
