package limiter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// GubernatorBehavior is how a gubernator cluster decides a key owned by another daemon (its
// Behavior enum, gubernator.proto).
type GubernatorBehavior string

// The behaviours ratelab runs.
const (
	// GubernatorBatching: the daemon a request reaches forwards it to the key's owner, batched
	// with others for up to BatchWait (500 µs by default); the owner decides.
	GubernatorBatching GubernatorBehavior = "batching"
	// GubernatorNoBatching: the same forwarding, one request per call.
	GubernatorNoBatching GubernatorBehavior = "no-batching"
	// GubernatorGlobal: the daemon a request reaches answers from its own copy of the key at
	// once and sends the hits to the owner later (every GlobalSyncWait, 100 ms by default); the
	// owner broadcasts its state back to every daemon on the same period.
	GubernatorGlobal GubernatorBehavior = "global"
)

// GubernatorAlgorithm is gubernator's Algorithm enum.
type GubernatorAlgorithm string

// The algorithms.
const (
	// GubernatorLeakyBucket: a bucket of Burst that refills one token every Duration/Limit ms,
	// kept as a float (docs/limiters.md): ratelab's token bucket of rate Limit/Duration.
	GubernatorLeakyBucket GubernatorAlgorithm = "leaky-bucket"
	// GubernatorTokenBucket: Limit hits per window of Duration that starts at the key's first hit
	// after the previous window expired: a fixed window, not a refilling bucket.
	GubernatorTokenBucket GubernatorAlgorithm = "token-bucket"
)

// GubernatorLimit is one rate limit as gubernator's API takes it.
type GubernatorLimit struct {
	Algorithm GubernatorAlgorithm
	Behavior  GubernatorBehavior
	// Limit hits per Duration; Burst is the leaky bucket's capacity (0: Limit).
	Limit, Burst int64
	Duration     time.Duration
}

// GubernatorLeaky maps a bucket policy to gubernator's leaky bucket: one token every
// Duration/Limit = 1/p.Rate s, capacity p.Burst. Duration is the shortest of a second, a minute
// and an hour in which p.Rate is a whole number of hits; a rate whole in none is refused.
func GubernatorLeaky(p BucketPolicy, b GubernatorBehavior) (GubernatorLimit, error) {
	if err := p.Validate(); err != nil {
		return GubernatorLimit{}, err
	}
	for _, d := range []time.Duration{time.Second, time.Minute, time.Hour} {
		if n := p.Rate * d.Seconds(); n == math.Trunc(n) {
			return GubernatorLimit{Algorithm: GubernatorLeakyBucket, Behavior: b, Limit: int64(n), Burst: p.Burst, Duration: d}, nil
		}
	}
	return GubernatorLimit{}, fmt.Errorf("rate %v/s: gubernator counts whole hits per duration: use a rate that is whole per hour", p.Rate)
}

// Gubernator asks a gubernator cluster through its HTTP/JSON gateway (POST /v1/GetRateLimits,
// one request per call), spreading requests over the daemons round robin like a load balancer
// in front of them. It sends each request's time as created_at (ms), so a decision is made at
// the request's time wherever the cluster decides it, and Decision.At is that millisecond: the
// gateway clock, as ratelab's own buckets use it. ratelab never links gubernator's module: the
// API is JSON over loopback HTTP. It is safe for concurrent use.
type Gubernator struct {
	urls    []string
	next    atomic.Uint64
	hc      *http.Client
	limit   GubernatorLimit
	algo    int
	behav   int
	timeout time.Duration
}

var _ Limiter = (*Gubernator)(nil)

// ErrGubernator wraps an error gubernator returned for a request (its RateLimitResp.error, or
// an HTTP status other than 200).
var ErrGubernator = errors.New("gubernator error")

// NewGubernator returns a client of the daemons whose HTTP gateways are at addrs
// ("127.0.0.1:PORT"). Of the options only WithTimeout applies.
func NewGubernator(addrs []string, l GubernatorLimit, opts ...Option) (*Gubernator, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: gubernator: no daemon addresses", ErrBadConfig)
	}
	g := &Gubernator{limit: l, timeout: cfg.timeout}
	switch l.Algorithm {
	case GubernatorTokenBucket:
		g.algo = 0
	case GubernatorLeakyBucket:
		g.algo = 1
	default:
		return nil, fmt.Errorf("%w: gubernator algorithm %q: use %s or %s", ErrBadConfig, l.Algorithm, GubernatorLeakyBucket, GubernatorTokenBucket)
	}
	switch l.Behavior {
	case GubernatorBatching:
		g.behav = 0
	case GubernatorNoBatching:
		g.behav = 1
	case GubernatorGlobal:
		g.behav = 2
	default:
		return nil, fmt.Errorf("%w: gubernator behavior %q: use %s, %s or %s", ErrBadConfig, l.Behavior, GubernatorBatching, GubernatorNoBatching, GubernatorGlobal)
	}
	if l.Limit < 1 || l.Duration < time.Millisecond || l.Burst < 0 {
		return nil, fmt.Errorf("%w: gubernator limit %d per %v burst %d: want limit >= 1, duration >= 1ms, burst >= 0", ErrBadConfig, l.Limit, l.Duration, l.Burst)
	}
	for _, a := range addrs {
		g.urls = append(g.urls, "http://"+a+"/v1/GetRateLimits")
	}
	g.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 2048, IdleConnTimeout: time.Minute}}
	return g, nil
}

// Limit is the limit every request sends.
func (g *Gubernator) Limit() GubernatorLimit { return g.limit }

// Close releases the client's idle connections.
func (g *Gubernator) Close() { g.hc.CloseIdleConnections() }

// guberReq is one RateLimitReq (gubernator.proto) in protojson's form: enums as numbers.
type guberReq struct {
	Name      string `json:"name"`
	UniqueKey string `json:"unique_key"`
	Hits      int64  `json:"hits"`
	Limit     int64  `json:"limit"`
	Duration  int64  `json:"duration"`
	Algorithm int    `json:"algorithm"`
	Behavior  int    `json:"behavior"`
	Burst     int64  `json:"burst"`
	CreatedAt int64  `json:"created_at"`
}

// guberResp is one RateLimitResp; protojson writes int64 as strings.
type guberResp struct {
	Status    string `json:"status"`
	Remaining string `json:"remaining"`
	ResetTime string `json:"reset_time"`
	Error     string `json:"error"`
}

// Allow decides r with one GetRateLimits call to the next daemon: the key is KeyFor(tenant,
// endpoint) in namespace "ratelab", hits r.Cost, created_at r.Now in ms.
func (g *Gubernator) Allow(ctx context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	body, err := json.Marshal(struct {
		Requests [1]guberReq `json:"requests"`
	}{[1]guberReq{{Name: "ratelab", UniqueKey: KeyFor(r.Tenant, r.Endpoint), Hits: r.Cost, Limit: g.limit.Limit,
		Duration: g.limit.Duration.Milliseconds(), Algorithm: g.algo, Behavior: g.behav, Burst: g.limit.Burst, CreatedAt: nowMs}}})
	if err != nil {
		return Decision{}, err
	}
	if g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	url := g.urls[(g.next.Add(1)-1)%uint64(len(g.urls))]
	res, err := g.call(ctx, url, body)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Allowed: res.Status != "OVER_LIMIT", Source: Central, At: time.UnixMilli(nowMs)}
	d.Remaining, _ = strconv.ParseInt(res.Remaining, 10, 64)
	if reset, err := strconv.ParseInt(res.ResetTime, 10, 64); err == nil && reset > nowMs {
		d.ResetAfter = time.Duration(reset-nowMs) * time.Millisecond
		if !d.Allowed {
			d.RetryAfter = d.ResetAfter
		}
	}
	return d, nil
}

// call posts body to url and returns the one response, or the error gubernator gave for it.
func (g *Gubernator) call(ctx context.Context, url string, body []byte) (guberResp, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return guberResp{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.hc.Do(req)
	if err != nil {
		return guberResp{}, fmt.Errorf("gubernator: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Responses []guberResp `json:"responses"`
		Message   string      `json:"message"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return guberResp{}, fmt.Errorf("gubernator: reply of %s: %w", url, err)
	}
	switch {
	case resp.StatusCode != http.StatusOK:
		return guberResp{}, fmt.Errorf("%w: HTTP %d: %s", ErrGubernator, resp.StatusCode, out.Message)
	case len(out.Responses) != 1:
		return guberResp{}, fmt.Errorf("%w: %d responses to one request", ErrBadReply, len(out.Responses))
	case out.Responses[0].Error != "":
		return guberResp{}, fmt.Errorf("%w: %s", ErrGubernator, out.Responses[0].Error)
	}
	return out.Responses[0], nil
}
