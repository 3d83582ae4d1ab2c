package limiter

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a PolicyCache.
const (
	// DefaultReloadEvery is how often PolicyCache.Start reloads the tariffs: a tariff change
	// applies within about one second on every gateway.
	DefaultReloadEvery = time.Second
	// DefaultLoadTimeout bounds one call of a PolicyCache's loader, the first one included.
	DefaultLoadTimeout = 5 * time.Second
)

// PolicyCache holds the live Tariffs of a gateway: Lookup reads them lock-free from an atomic
// pointer, and Reload or the loop of Start swap in the loader's newer version. Rules come from a
// configuration store, are cached briefly and are replaced when a tariff changes: no request
// reads the store, and a change applies within one reload period.
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
