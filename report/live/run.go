package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"ratelab/results"
)

// DefaultGrace is how long Finish keeps serving the final totals before it shuts the server
// down: long enough for a scrape every second or two to see them; with Prometheus's default
// 15 s interval give WithGrace 30 s, or push.
const DefaultGrace = 5 * time.Second

// DefaultPushEvery is how often WithPush sends the metrics while the run goes.
const DefaultPushEvery = 5 * time.Second

// MetricsPath is where the server serves the metrics.
const MetricsPath = "/metrics"

// ErrNotLoopback is CheckListen's error for an address other hosts could reach.
var ErrNotLoopback = errors.New("live: listen address is not loopback")

// Option configures Start.
type Option func(*config)

type config struct {
	listen    string
	pushURL   string
	pushEvery time.Duration
	grace     time.Duration
	info      map[string]string
	logf      func(format string, args ...any)
	client    *http.Client
}

// WithListen serves the metrics at http://addr/metrics (addr "127.0.0.1:0" picks a free port;
// Run.Addr says which). Start does not judge the address: see CheckListen.
func WithListen(addr string) Option { return func(c *config) { c.listen = addr } }

// WithPush sends the metrics to url with Prometheus remote write every DefaultPushEvery (see
// WithPushEvery) and once more at Finish.
func WithPush(url string) Option { return func(c *config) { c.pushURL = url } }

// WithPushEvery sets how often WithPush sends; d <= 0 keeps DefaultPushEvery.
func WithPushEvery(d time.Duration) Option { return func(c *config) { c.pushEvery = d } }

// WithGrace sets how long Finish keeps serving after the totals are final (default
// DefaultGrace; 0 shuts down at once).
func WithGrace(d time.Duration) Option { return func(c *config) { c.grace = d } }

// WithInfo adds labels to ratelab_run_info only (version, mode, ...).
func WithInfo(labels map[string]string) Option { return func(c *config) { c.info = labels } }

// WithLogf receives what goes wrong in the background (a failed push); nil is silent.
func WithLogf(f func(format string, args ...any)) Option { return func(c *config) { c.logf = f } }

// WithHTTPClient sets the client of the pushes (default: a client with a 10 s timeout).
func WithHTTPClient(h *http.Client) Option { return func(c *config) { c.client = h } }

// Run is one run's live metrics with their server and pusher. Its Metrics methods feed it;
// Finish ends it.
type Run struct {
	*Metrics
	cfg    config
	ln     net.Listener
	srv    *http.Server
	served chan error
	push   *pusher
}

// Start creates the metrics of run runID of scenario and starts serving and pushing them as the
// options say. With neither WithListen nor WithPush it only keeps the metrics (Registry).
func Start(scenario, runID string, opts ...Option) (*Run, error) {
	cfg := config{pushEvery: DefaultPushEvery, grace: DefaultGrace, logf: func(string, ...any) {}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.pushEvery <= 0 {
		cfg.pushEvery = DefaultPushEvery
	}
	if cfg.logf == nil {
		cfg.logf = func(string, ...any) {}
	}
	if cfg.client == nil {
		cfg.client = &http.Client{Timeout: 10 * time.Second}
	}
	r := &Run{Metrics: NewMetrics(scenario, runID, cfg.info), cfg: cfg}
	if cfg.listen != "" {
		ln, err := net.Listen("tcp", cfg.listen)
		if err != nil {
			return nil, fmt.Errorf("live: metrics listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle(MetricsPath, promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}))
		srv, served := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, make(chan error, 1)
		r.ln, r.srv, r.served = ln, srv, served
		go func() { served <- srv.Serve(ln) }()
	}
	if cfg.pushURL != "" {
		r.push = startPusher(cfg.pushURL, r.reg, cfg.client, cfg.pushEvery, cfg.logf)
	}
	return r, nil
}

// TeeInterval returns an OnInterval hook that feeds r, then calls next (which may be nil): the
// driver's one hook serves the progress display and the metrics. On a nil *Run it returns next,
// so a caller can wire it whether or not metrics were asked for.
func (r *Run) TeeInterval(next func(results.Interval)) func(results.Interval) {
	if r == nil {
		return next
	}
	return func(iv results.Interval) {
		r.OnInterval(iv)
		if next != nil {
			next(iv)
		}
	}
}

// TeeProgress is TeeInterval for the OnProgress hook.
func (r *Run) TeeProgress(next func(results.Progress)) func(results.Progress) {
	if r == nil {
		return next
	}
	return func(p results.Progress) {
		r.OnProgress(p)
		if next != nil {
			next(p)
		}
	}
}

// Addr is the address the server listens on, "" without WithListen (or on a nil *Run).
func (r *Run) Addr() string {
	if r == nil || r.ln == nil {
		return ""
	}
	return r.ln.Addr().String()
}

// Finish sets the counters to sum's totals (Metrics.Finish), pushes them once more, keeps
// serving them for the grace period so that a last scrape sees them, then stops. It returns the
// final push's error, if any. ctx cuts the grace period short, not the final push (the push
// client's timeout bounds it), so an interrupted run still lands its totals. A nil *Run does
// nothing. Finish and Close are not for concurrent use.
func (r *Run) Finish(ctx context.Context, sum *results.Summary) error {
	if r == nil {
		return nil
	}
	r.Metrics.Finish(sum)
	var err error
	if r.push != nil {
		err = r.push.stop(context.WithoutCancel(ctx))
	}
	if r.srv != nil && r.cfg.grace > 0 {
		t := time.NewTimer(r.cfg.grace)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return errors.Join(err, r.closeServer())
}

// Close stops serving and pushing at once, without a final push: for a run that failed. After
// Finish, and on a nil *Run, it does nothing.
func (r *Run) Close() error {
	if r == nil {
		return nil
	}
	if r.push != nil {
		r.push.cancel()
	}
	return r.closeServer()
}

func (r *Run) closeServer() error {
	if r.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if serr := <-r.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	r.srv = nil
	return err
}
