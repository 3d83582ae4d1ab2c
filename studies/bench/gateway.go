package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/limiter/gateway"
)

// Gateway variants, as GatewayVariant.Name names them, in the order they run.
const (
	GatewayBare   = "bare net/http"
	GatewayMemory = "gateway, in-memory bucket"
	GatewayRedis  = "gateway, Redis coalescing bucket"
)

// gatewayTenants is how many API keys the load cycles through (wrk.lua reads it from the
// environment): enough distinct buckets that a decision is a map lookup or a Redis key among
// many, as in a real gateway, spread over every primary.
const gatewayTenants = 1000

// gatewayPolicy is generous enough that every request is allowed, so that the three variants
// send the same 200 answer and differ only by the decision in front of it.
var gatewayPolicy = limiter.BucketPolicy{Rate: 100_000, Burst: 100_000}

// GatewayVariant is one server of section 6 under wrk, both halves of a repetition together.
type GatewayVariant struct {
	Name           string  `json:"name"`
	Requests       int64   `json:"requests"`
	Seconds        float64 `json:"seconds"`
	RequestsPerSec float64 `json:"requests_per_s"`
	// P50Ms is the halves' mean p50 and P99Ms the worse of the halves' p99 (wrk reports
	// percentiles, not histograms that could be merged).
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// Non2xx counts answers that were not 2xx (a limiter error is a 503), SocketErrors wrk's
	// connect, read, write and timeout errors.
	Non2xx       int64 `json:"non_2xx"`
	SocketErrors int64 `json:"socket_errors"`
	// WrkCPUUs, ServerCPUUs and RedisCPUUs are the CPU time per request of wrk, of this process
	// (the server and its limiter) and of the Redis nodes' main threads (every node, replicas
	// applying the writes too): where the machine's cores went, which a closed-loop rate on
	// a shared machine follows.
	WrkCPUUs    float64 `json:"wrk_cpu_us_per_request"`
	ServerCPUUs float64 `json:"server_cpu_us_per_request"`
	RedisCPUUs  float64 `json:"redis_cpu_us_per_request"`

	runs              int // wrk runs booked
	wrkCPU, serverCPU time.Duration
	redisCPU          float64 // seconds
}

// Gateway is section 6: closed-loop HTTP throughput at Conns connections of a bare net/http
// handler, the gateway with the in-memory bucket and the gateway with the Redis coalescing
// bucket, on one port, and the gateway's rates over the bare handler's.
type Gateway struct {
	Command     string           `json:"command"`
	Conns       int              `json:"conns"`
	Variants    []GatewayVariant `json:"variants"`
	MemoryRatio float64          `json:"memory_over_bare"`
	RedisRatio  float64          `json:"redis_over_bare"`
}

// switchHandler serves with the handler last stored: one server, one port, for every variant.
type switchHandler struct{ h atomic.Pointer[http.Handler] }

func (s *switchHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

func (s *switchHandler) set(h http.Handler) { s.h.Store(&h) }

// measureGateway is section 6. The gateway runs in this process (the limiter/gateway package's
// handler on a real net/http server on 127.0.0.1:0), so the bench needs no second binary; wrk,
// a separate process, is the load: the same connections and duration for every variant. The
// variants run in halves, bare, in-memory, Redis, Redis, in-memory, bare, so that a drift of the
// machine's other load favours none of them.
func measureGateway(ctx context.Context, opts Options, addrs []string, dir string) (Gateway, error) {
	mem, err := limiter.NewTokenBucket(gatewayPolicy)
	if err != nil {
		return Gateway{}, fmt.Errorf("bench: gateway: %w", err)
	}
	client := newClient(addrs, limiter.DefaultFlushers+2)
	defer client.Close()
	// The decision deadline is the central section's: this measures throughput, and a 503 of
	// a decision that waited out gateway.DefaultTimeout on a loaded machine would be counted
	// as a fast answer.
	co, err := limiter.NewCoalescingBucket(client, gatewayPolicy, limiter.WithBucketOptions(limiter.WithTimeout(decisionTimeout)))
	if err != nil {
		return Gateway{}, fmt.Errorf("bench: gateway: %w", err)
	}
	defer co.Close()
	if err := co.Load(ctx); err != nil {
		return Gateway{}, fmt.Errorf("bench: gateway: %w", err)
	}
	handlers := []http.Handler{gateway.EchoUpstream()}
	for _, lim := range []limiter.Limiter{mem, co} {
		gw, err := gateway.NewServer("127.0.0.1:0", lim, nil, gateway.WithPolicy(gatewayPolicy))
		if err != nil {
			return Gateway{}, fmt.Errorf("bench: gateway: %w", err)
		}
		handlers = append(handlers, gw.Handler())
	}
	url, sw, stop, err := serveSwitch(handlers[0])
	if err != nil {
		return Gateway{}, err
	}
	defer stop()
	script, err := writeWrkScript(dir)
	if err != nil {
		return Gateway{}, err
	}
	g := Gateway{Conns: opts.GatewayConns, Variants: []GatewayVariant{{Name: GatewayBare}, {Name: GatewayMemory}, {Name: GatewayRedis}}}
	half := gatewayHalf(opts.Seconds)
	for _, i := range []int{0, 1, 2, 2, 1, 0} {
		sw.set(handlers[i])
		if g.Command, err = g.Variants[i].measureHalf(ctx, opts, addrs, script, url, half); err != nil {
			return Gateway{}, err
		}
	}
	for i := range g.Variants {
		v := &g.Variants[i]
		if err := v.check(); err != nil {
			return Gateway{}, err
		}
		v.cpuPerRequest()
		opts.Logf("bench:   %-34s %8.0f requests/s  p50 %.3f ms  p99 %.3f ms  CPU µs/request: wrk %.1f, server %.1f, Redis %.1f",
			v.Name, v.RequestsPerSec, v.P50Ms, v.P99Ms, v.WrkCPUUs, v.ServerCPUUs, v.RedisCPUUs)
	}
	g.MemoryRatio = g.Variants[1].RequestsPerSec / g.Variants[0].RequestsPerSec
	g.RedisRatio = g.Variants[2].RequestsPerSec / g.Variants[0].RequestsPerSec
	return g, nil
}

// gatewayHalf is one wrk run: half of the section's duration in whole seconds (wrk's unit),
// at least one.
func gatewayHalf(d time.Duration) time.Duration {
	return max(time.Second, (d/2 + time.Second/2).Truncate(time.Second))
}

// serveSwitch serves a switchHandler starting with h on a new loopback port, with the
// gateway's own server settings (timeouts, header limit), and returns its URL and a stop.
func serveSwitch(h http.Handler) (string, *switchHandler, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, fmt.Errorf("bench: gateway: listen: %w", err)
	}
	sw := &switchHandler{}
	sw.set(h)
	t := gateway.DefaultTimeouts()
	srv := &http.Server{
		Handler: sw, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write,
		IdleTimeout: t.Idle, MaxHeaderBytes: gateway.DefaultMaxHeaderBytes,
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", sw, func() { _ = srv.Close() }, nil
}

// measureHalf runs wrk once against the variant being served at url and books what it
// measured, with the CPU time wrk, this process (the server) and the Redis nodes' main threads
// (every node at addrs) spent meanwhile. It returns wrk's command line.
func (v *GatewayVariant) measureHalf(ctx context.Context, opts Options, addrs []string, script, url string, d time.Duration) (string, error) {
	before, err := cluster.ReadNodeStats(ctx, addrs)
	if err != nil {
		return "", fmt.Errorf("bench: gateway %s: %w", v.Name, err)
	}
	cpu := processCPU()
	r, cmd, err := runWrk(ctx, opts, script, url, d)
	if err != nil {
		return "", fmt.Errorf("bench: gateway %s: %w", v.Name, err)
	}
	v.serverCPU += processCPU() - cpu
	after, err := cluster.ReadNodeStats(ctx, addrs)
	if err != nil {
		return "", fmt.Errorf("bench: gateway %s: %w", v.Name, err)
	}
	v.redisCPU += after.CPUSeconds - before.CPUSeconds
	v.add(r)
	return cmd, nil
}

// cpuPerRequest sets the variant's CPU per request from its totals.
func (v *GatewayVariant) cpuPerRequest() {
	n := float64(max(v.Requests, 1))
	v.WrkCPUUs = float64(v.wrkCPU.Microseconds()) / n
	v.ServerCPUUs = float64(v.serverCPU.Microseconds()) / n
	v.RedisCPUUs = 1e6 * v.redisCPU / n
}

// add books one wrk run into v.
func (v *GatewayVariant) add(r wrkResult) {
	v.Requests += r.Requests
	v.Seconds += r.DurationUs / 1e6
	v.RequestsPerSec = float64(v.Requests) / v.Seconds
	v.P50Ms = (float64(v.runs)*v.P50Ms + r.P50Us/1e3) / float64(v.runs+1)
	v.runs++
	v.P99Ms = max(v.P99Ms, r.P99Us/1e3)
	v.Non2xx += r.Status
	v.SocketErrors += r.Connect + r.Read + r.Write + r.Timeout
	v.wrkCPU += r.cpu
}

// check refuses a variant whose rate is not one of 200 answers: an error answer is cheaper than
// a decision, so a rate with more than 1% of them would flatter the variant.
func (v *GatewayVariant) check() error {
	if v.Requests == 0 {
		return fmt.Errorf("bench: gateway %s: wrk completed no request", v.Name)
	}
	if bad := v.Non2xx + v.SocketErrors; float64(bad) > 0.01*float64(v.Requests) {
		return fmt.Errorf("bench: gateway %s: %d of %d requests failed (%d not 2xx, %d socket errors): the rate is not one of decisions",
			v.Name, bad, v.Requests, v.Non2xx, v.SocketErrors)
	}
	return nil
}
