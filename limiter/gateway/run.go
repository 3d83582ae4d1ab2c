package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/scenarios/cluster"
)

// Defaults of `ratelab gateway` (RunOptions' zero fields).
const (
	DefaultListen       = "127.0.0.1:8080"
	DefaultRate         = 100.0 // tokens per second per (tenant, endpoint)
	DefaultBurst        = 200   // tokens
	DefaultTimeout      = 50 * time.Millisecond
	DefaultShutdownWait = 5 * time.Second
	ClusterLocal        = "local"   // start redis-server nodes for the run, stop them after
	ClusterRunning      = "running" // attach to the cluster of `ratelab cluster up`
)

// ErrNotLoopback reports a listen address off 127.0.0.0/8 or ::1 without AllowRemote.
var ErrNotLoopback = errors.New("gateway: listen address is not loopback")

// RunOptions configure Run. Zero fields take the defaults above.
type RunOptions struct {
	// Listen is the host:port to serve on; default DefaultListen. Must be loopback unless
	// AllowRemote: this tool sends and takes traffic on 127.0.0.1 only.
	Listen      string
	AllowRemote bool
	// Upstream is the backend URL allowed requests go to; "" answers them with EchoUpstream.
	Upstream string
	// Rate (tokens/s) and Burst (tokens) are every (tenant, endpoint)'s bucket policy.
	Rate  float64
	Burst int64
	// Cluster is ClusterLocal (default) or ClusterRunning; StateFile locates the running one
	// (default cluster.DefaultStateFile()).
	Cluster   string
	StateFile string
	// Local configures the cluster ClusterLocal starts; the zero value is 3 primaries x 1
	// replica on free loopback ports. Its Logf defaults to Logf.
	Local cluster.Options
	// Timeout bounds one decision by Redis (limiter.WithTimeout); default DefaultTimeout.
	Timeout time.Duration
	// Logf receives progress lines; nil is silent.
	Logf func(format string, args ...any)
	// Ready, if set, receives the address the server listens on once it accepts connections.
	Ready func(addr string)
}

func (o RunOptions) withDefaults() RunOptions {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if o.Cluster == "" {
		o.Cluster = ClusterLocal
	}
	if o.StateFile == "" {
		o.StateFile = cluster.DefaultStateFile()
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
func (o RunOptions) Validate() error {
	o = o.withDefaults()
	var errs []error
	if err := CheckListen(o.Listen, o.AllowRemote); err != nil {
		errs = append(errs, err)
	}
	if err := (limiter.BucketPolicy{Rate: o.Rate, Burst: o.Burst}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("gateway: rate/burst: %w", err))
	}
	if o.Cluster != ClusterLocal && o.Cluster != ClusterRunning {
		errs = append(errs, fmt.Errorf("gateway: cluster %q: want %q (start nodes) or %q (the one from `ratelab cluster up`)", o.Cluster, ClusterLocal, ClusterRunning))
	}
	if err := o.Local.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("gateway: local cluster: %w", err))
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

// Run serves `ratelab gateway` until ctx ends: it starts a local Redis Cluster (or attaches to
// the running one), builds a ClusterClient that neither retries nor stalls, a
// limiter.RedisTokenBucket with the options' policy and timeout, and a Server; then it shuts
// the server down gracefully (DefaultShutdownWait), closes the client and stops the cluster it
// started. It returns nil after a clean shutdown on ctx's end.
func Run(ctx context.Context, o RunOptions) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	o = o.withDefaults()
	cl, err := openCluster(ctx, o)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeCluster(cl, o)) }()

	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 cl.Addrs(),
		MaxRetries:            -1,   // no hidden retries: a failure is a 503, not a stall
		DialerRetries:         1,    // the pool re-dials 5 times, 100 ms apart, by default
		ContextTimeoutEnabled: true, // without it go-redis ignores the per-decision deadline
	})
	defer closeQuietly(client)

	policy := limiter.BucketPolicy{Rate: o.Rate, Burst: o.Burst}
	lim, err := limiter.NewRedisTokenBucket(client, policy, limiter.WithTimeout(o.Timeout))
	if err != nil {
		return err
	}
	loadCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = lim.Load(loadCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("gateway: loading the token-bucket script: %w", err)
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
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", o.Listen, err)
	}
	o.Logf("gateway on http://%s (rate %g/s burst %d per tenant and endpoint, Redis %s, decision timeout %v)",
		ln.Addr(), o.Rate, o.Burst, cl.Addrs(), o.Timeout)
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

func openCluster(ctx context.Context, o RunOptions) (*cluster.Local, error) {
	if o.Cluster == ClusterRunning {
		cl, err := cluster.Attach(ctx, o.StateFile)
		if err != nil {
			return nil, fmt.Errorf("gateway: --cluster running: %w (start one with `ratelab cluster up`)", err)
		}
		return cl, nil
	}
	opts := o.Local
	if opts.Logf == nil {
		opts.Logf = o.Logf
	}
	o.Logf("starting a local Redis Cluster")
	return cluster.StartLocal(ctx, opts)
}

// closeCluster stops a cluster Run started; for an attached one Close releases only clients.
func closeCluster(cl *cluster.Local, o RunOptions) error {
	if o.Cluster == ClusterLocal {
		o.Logf("stopping the local Redis Cluster")
	}
	return cl.Close()
}

func closeQuietly(c io.Closer) { _ = c.Close() }
