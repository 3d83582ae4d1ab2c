package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"ratelab/limiter"
)

// Server defaults. They bound what one slow or hostile client can hold: a header read, a body
// read, a response write, an idle keep-alive connection, and the header size.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 16 << 10 // 16 KiB: API keys and a few headers, not http's 1 MiB
)

// Routes of a Server besides the limited ones.
const (
	MetricsPath = "/metrics"
	HealthPath  = "/healthz"
	// HotKeysPath (hotkeys.go) serves the top-K sketch of hot keys, hashed.
)

// Timeouts are the http.Server timeouts of a Server.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts returns the Default*Timeout constants.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: DefaultReadHeaderTimeout, Read: DefaultReadTimeout, Write: DefaultWriteTimeout, Idle: DefaultIdleTimeout}
}

// Server is an HTTP gateway: /metrics, /healthz and /debug/hotkeys unlimited, every other path through
// Middleware to the upstream.
type Server struct {
	srv     *http.Server
	metrics *Metrics
	hotKeys *HotKeys
}

// NewServer returns a Server for addr (host:port) limiting with lim in front of upstream
// (nil means EchoUpstream). The options are Middleware's plus WithTimeouts and
// WithMaxHeaderBytes; without WithMetrics it creates a Metrics. It does not listen yet.
func NewServer(addr string, lim limiter.Limiter, upstream http.Handler, opts ...Option) (*Server, error) {
	if lim == nil {
		return nil, fmt.Errorf("gateway: limiter is nil: pass a limiter.Limiter (limiter.Noop{} to limit nothing)")
	}
	if upstream == nil {
		upstream = EchoUpstream()
	}
	c := newConfig(opts)
	if c.metrics == nil {
		c.metrics = NewMetrics()
		opts = append(opts[:len(opts):len(opts)], WithMetrics(c.metrics))
	}
	if c.hotKeys == nil {
		c.hotKeys = NewHotKeys(DefaultHotKeys)
		opts = append(opts[:len(opts):len(opts)], WithHotKeys(c.hotKeys))
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, c.metrics.Handler())
	mux.Handle(HotKeysPath, c.hotKeys.Handler())
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
	})
	mux.Handle("/", Middleware(lim, opts...)(upstream))
	return &Server{
		hotKeys: c.hotKeys,
		metrics: c.metrics,
		srv: &http.Server{
			Addr:              addr,
			Handler:           mux,
			ReadHeaderTimeout: c.timeouts.ReadHeader,
			ReadTimeout:       c.timeouts.Read,
			WriteTimeout:      c.timeouts.Write,
			IdleTimeout:       c.timeouts.Idle,
			MaxHeaderBytes:    c.maxHeader,
		},
	}, nil
}

// HotKeys returns the server's top-K sketch of (tenant, endpoint) keys.
func (s *Server) HotKeys() *HotKeys { return s.hotKeys }

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Handler returns the server's routes, for httptest.NewServer or an http.Server of the caller's.
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// HTTPServer returns the underlying http.Server (its timeouts and MaxHeaderBytes are set).
func (s *Server) HTTPServer() *http.Server { return s.srv }

// Serve serves on ln until Shutdown; it returns nil after a Shutdown, the error otherwise.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ListenAndServe listens on the server's address and serves until Shutdown.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", s.srv.Addr, err)
	}
	return s.Serve(ln)
}

// Shutdown stops accepting connections and waits for in-flight requests until ctx ends
// (http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// echoBody is EchoUpstream's answer.
var echoBody = []byte(`{"ok":true}` + "\n")

// EchoUpstream answers every request 200 with {"ok":true}: a stand-in backend that costs
// nothing, so a load test measures the gateway and the limiter.
func EchoUpstream() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = jsonContentType
		_, _ = w.Write(echoBody)
	})
}

// ProxyUpstream forwards allowed requests to the backend at rawURL (scheme and host, e.g.
// http://127.0.0.1:9000) with httputil.ReverseProxy; the API key headers pass through.
func ProxyUpstream(rawURL string) (http.Handler, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream %q: %w: want an absolute URL such as http://127.0.0.1:9000", rawURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gateway: upstream %q: want an absolute http(s) URL such as http://127.0.0.1:9000", rawURL)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
	}, nil
}
