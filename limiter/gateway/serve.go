package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// Defaults of `ratelab gateway` (ServeOptions' zero fields).
const (
	DefaultListen       = "127.0.0.1:8080"
	DefaultRate         = 100.0 // tokens per second per (tenant, endpoint)
	DefaultBurst        = 200   // tokens
	DefaultTimeout      = 50 * time.Millisecond
	DefaultShutdownWait = 5 * time.Second
)

// ErrNotLoopback reports a listen address off 127.0.0.0/8 or ::1 without AllowRemote.
var ErrNotLoopback = errors.New("gateway: listen address is not loopback")

// ServeOptions configure Serve. Zero fields take the defaults above.
type ServeOptions struct {
	// Listen is the host:port to serve on; default DefaultListen. Must be loopback unless
	// AllowRemote: this tool sends and takes traffic on 127.0.0.1 only.
	Listen      string
	AllowRemote bool
	// Upstream is the backend URL allowed requests go to; "" answers them with EchoUpstream.
	Upstream string
	// Rate (tokens/s) and Burst (tokens) are every (tenant, endpoint)'s bucket policy.
	Rate  float64
	Burst int64
	// Timeout bounds one decision by Redis (limiter.WithTimeout); default DefaultTimeout.
	Timeout time.Duration
	// Logf receives progress lines; nil is silent.
	Logf func(format string, args ...any)
	// Ready, if set, receives the address the server listens on once it accepts connections.
	Ready func(addr string)
	// Version and Commit label ratelab_build_info (Metrics.SetBuildInfo); Version "" keeps
	// NewMetrics' "dev" and the commit the build recorded.
	Version, Commit string
}

func (o ServeOptions) withDefaults() ServeOptions {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Validate reports every problem of o (after defaults) at once, naming the field and the fix.
func (o ServeOptions) Validate() error {
	o = o.withDefaults()
	var errs []error
	if err := CheckListen(o.Listen, o.AllowRemote); err != nil {
		errs = append(errs, err)
	}
	if err := (limiter.BucketPolicy{Rate: o.Rate, Burst: o.Burst}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("gateway: rate/burst: %w", err))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("gateway: timeout %v: must be > 0, e.g. 50ms", o.Timeout))
	}
	if o.Upstream != "" {
		if _, err := ProxyUpstream(o.Upstream); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CheckListen refuses a listen address whose host is not a loopback IP or "localhost",
// unless allowRemote. An empty host (":8080") listens on every interface and is refused too.
func CheckListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gateway: listen %q: %w: want host:port such as %s", addr, err, DefaultListen)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: listen %q: this machine is loopback-only; use 127.0.0.1:PORT, or pass --allow-remote to listen there anyway", ErrNotLoopback, addr)
}

// Serve is the body of `ratelab gateway`: it serves on o.Listen until ctx ends, deciding with a
// limiter.RedisTokenBucket of o's policy and timeout over a ClusterClient built from redisOpts
// (addresses and credentials; Serve makes the client neither retry nor stall), then shuts the
// server down gracefully (DefaultShutdownWait) and closes the client. The caller owns the
// Redis Cluster redisOpts reaches. Serve returns nil after a clean shutdown on ctx's end.
func Serve(ctx context.Context, redisOpts *redis.ClusterOptions, o ServeOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if redisOpts == nil || len(redisOpts.Addrs) == 0 {
		return errors.New("gateway: no Redis Cluster address: pass the cluster's client options")
	}
	o = o.withDefaults()
	client := newClusterClient(redisOpts)
	defer func() { _ = client.Close() }()
	policy := limiter.BucketPolicy{Rate: o.Rate, Burst: o.Burst}
	lim, err := loadTokenBucket(ctx, client, policy, o.Timeout)
	if err != nil {
		return err
	}
	var upstream http.Handler
	if o.Upstream != "" {
		if upstream, err = ProxyUpstream(o.Upstream); err != nil {
			return err
		}
	}
	srv, err := NewServer(o.Listen, lim, upstream, WithPolicy(policy))
	if err != nil {
		return err
	}
	if o.Version != "" {
		srv.Metrics().SetBuildInfo(o.Version, o.Commit)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", o.Listen, err)
	}
	o.Logf("gateway on http://%s (rate %g/s burst %d per tenant and endpoint, Redis %s, decision timeout %v)",
		ln.Addr(), o.Rate, o.Burst, redisOpts.Addrs, o.Timeout)
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("gateway: serve %s: %w", o.Listen, err)
	case <-ctx.Done():
	}
	o.Logf("gateway: shutting down")
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultShutdownWait)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	return <-served
}

// newClusterClient returns a client of the cluster redisOpts reaches that fails fast: a
// failure is a 503, not a stall behind hidden retries. redisOpts itself is not changed.
func newClusterClient(redisOpts *redis.ClusterOptions) *redis.ClusterClient {
	ro := *redisOpts
	ro.MaxRetries = -1              // no hidden retries
	ro.DialerRetries = 1            // the pool re-dials 5 times, 100 ms apart, by default
	ro.ContextTimeoutEnabled = true // without it go-redis ignores the per-decision deadline
	return redis.NewClusterClient(&ro)
}

// loadTokenBucket returns the Redis token bucket Serve decides with, its script already loaded
// on every primary so that the first requests do not pay for NOSCRIPT.
func loadTokenBucket(ctx context.Context, c *redis.ClusterClient, p limiter.BucketPolicy, timeout time.Duration) (*limiter.RedisTokenBucket, error) {
	lim, err := limiter.NewRedisTokenBucket(c, p, limiter.WithTimeout(timeout))
	if err != nil {
		return nil, err
	}
	loadCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lim.Load(loadCtx); err != nil {
		return nil, fmt.Errorf("gateway: loading the token-bucket script: %w", err)
	}
	return lim, nil
}
