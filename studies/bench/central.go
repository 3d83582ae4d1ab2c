package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/workload"
)

// centralTenants is how many tenants of the target primary section 3 spreads its decisions over.
const centralTenants = 10_000

// centralPolicy is hot-tenant's policy: the script's work is the same whatever it decides.
var centralPolicy = limiter.BucketPolicy{Rate: 100, Burst: 200}

// target is the primary that sections 3 and 4 both load: the owner of the hottest tenant's slot,
// and tenants whose keys live there. Comparing with redis-benchmark is only fair when both
// measure the same single Redis process.
type target struct {
	addrs   []string
	addr    string
	tenants []string
	tag     string // a tenant on the target, the hash tag of redis-benchmark's keys
}

func newTarget(ctx context.Context, addrs []string) (*target, error) {
	c := newClient(addrs, 16)
	defer c.Close()
	t := &target{addrs: addrs}
	for i := 0; len(t.tenants) < centralTenants; i++ {
		name := "tenant-" + strconv.Itoa(i)
		n, err := c.MasterForKey(ctx, limiter.KeyFor(name, "read"))
		if err != nil {
			return nil, fmt.Errorf("bench: slot map: %w", err)
		}
		if i == 0 {
			t.addr, t.tag = n.Options().Addr, name
		}
		if n.Options().Addr == t.addr {
			t.tenants = append(t.tenants, name)
		}
		if i > 100*centralTenants {
			return nil, fmt.Errorf("bench: found only %d tenants on %s", len(t.tenants), t.addr)
		}
	}
	return t, nil
}

// newClient builds a cluster client as scenarios do (no hidden retries, deadlines honoured)
// with pool connections per node. The read timeout is generous: this measures throughput.
func newClient(addrs []string, pool int) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: pool, PoolTimeout: 2 * time.Second,
	})
}

// decisionTimeout bounds one central decision in section 3: long, because a throughput test with
// hundreds of callers on 2 cores queues decisions; errors are counted, not hidden.
const decisionTimeout = 2 * time.Second

// The central transports under test, as Central.Mode names them: plain go-redis calls, go-redis
// AutoPipeline, and limiter.CoalescingBucket.
const (
	modePlain        = "go-redis plain"
	modeAutoPipeline = "go-redis AutoPipeline"
	modeCoalescing   = "ratelab coalescing"
)

// variant is one central transport under test.
type variant struct {
	mode  string
	c     *redis.ClusterClient
	lim   limiter.Limiter
	co    *limiter.CoalescingBucket // coalescing only
	total Central
	hist  *results.Histogram
	cpu   time.Duration
	took  time.Duration
	srv   serverUse
}

// measureCentral is section 3: the three transports of the token-bucket script, each with its
// own client and Conns x Depth closed-loop callers, opts.Seconds each in all, at GOMAXPROCS
// opts.ClientProcs (restored after). The variants run in halves, in the order plain,
// AutoPipeline, coalescing, coalescing, AutoPipeline, plain, so that a machine whose other load
// drifts during the section favours none of them.
func measureCentral(ctx context.Context, opts Options, t *target) ([]Central, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(opts.ClientProcs))
	callers := opts.Conns * opts.Depth
	vs := []*variant{{mode: modePlain}, {mode: modeAutoPipeline}, {mode: modeCoalescing}}
	defer func() {
		for _, v := range vs {
			v.close()
		}
	}()
	for _, v := range vs {
		if err := v.open(ctx, opts, t.addrs); err != nil {
			return nil, err
		}
	}
	for _, i := range []int{0, 1, 2, 2, 1, 0} {
		if err := vs[i].measureHalf(ctx, opts, t, callers); err != nil {
			return nil, err
		}
	}
	var out []Central
	for _, v := range vs {
		r := v.result(opts, callers)
		opts.Logf("bench:   %-22s %8.0f decisions/s  p50 %.3f ms  p99 %.3f ms  %.1f µs CPU/decision  Redis busy %.0f%% (%.1f µs/call)  errors %d",
			v.mode, r.DecisionsPerSec, r.P50Ms, r.P99Ms, r.CPUPerDecisionUs, 100*r.RedisBusy, r.RedisUsPerCall, r.Errors)
		if r.Decisions == 0 {
			return nil, fmt.Errorf("bench: %s: no decision succeeded in %v (%d errors)", v.mode, opts.Seconds, r.Errors)
		}
		out = append(out, r)
	}
	return out, nil
}

// open builds the variant's client and limiter for its mode and loads the script.
func (v *variant) open(ctx context.Context, opts Options, addrs []string) error {
	callers := opts.Conns * opts.Depth
	timeout := limiter.WithTimeout(decisionTimeout)
	var load func(context.Context) error
	switch v.mode {
	case modePlain:
		v.c = newClient(addrs, callers)
		b, err := limiter.NewRedisTokenBucket(v.c, centralPolicy, timeout)
		if err != nil {
			return err
		}
		v.lim, load = b, b.Load
	case modeAutoPipeline:
		// go-redis's blocking autopipeliner with its defaults: callers block, the client
		// batches them per node. It is a redis.Scripter, so the limiter is unchanged.
		v.c = newClient(addrs, callers)
		ap, err := v.c.AutoPipeline()
		if err != nil {
			return fmt.Errorf("bench: go-redis AutoPipeline: %w", err)
		}
		b, err := limiter.NewRedisTokenBucket(ap, centralPolicy, timeout)
		if err != nil {
			return err
		}
		v.lim, load = b, b.Load
	default: // modeCoalescing
		v.c = newClient(addrs, opts.Conns+2)
		b, err := limiter.NewCoalescingBucket(v.c, centralPolicy, limiter.WithBatchSize(opts.Depth),
			limiter.WithFlushers(opts.Conns), limiter.WithBatchLinger(*opts.Linger), limiter.WithBucketOptions(timeout))
		if err != nil {
			return err
		}
		v.lim, load, v.co = b, b.Load, b
	}
	if err := load(ctx); err != nil {
		return fmt.Errorf("bench: %s: %w", v.mode, err)
	}
	v.hist = results.NewHistogram()
	return nil
}

// close closes what open opened.
func (v *variant) close() {
	if v.co != nil {
		_ = v.co.Close()
	}
	if v.c != nil {
		_ = v.c.Close()
	}
}

// measureHalf runs the variant's callers closed loop for half of opts.Seconds against t and adds
// what they and the target's main thread did to the variant's totals.
func (v *variant) measureHalf(ctx context.Context, opts Options, t *target, callers int) error {
	var (
		seg segment
		h   *results.Histogram
	)
	if err := v.srv.during(ctx, t.addr, func() time.Duration {
		seg, h = closedLoop(ctx, v.lim, t.tenants, callers, opts.Seconds/2)
		return seg.took
	}); err != nil {
		return err
	}
	v.total.Decisions += seg.Decisions
	v.total.Errors += seg.Errors
	v.cpu += seg.cpu
	v.took += seg.took
	v.hist.Merge(h)
	return nil
}

// result is the variant's row of section 3, from its totals.
func (v *variant) result(opts Options, callers int) Central {
	r := v.total
	r.Mode, r.Callers, r.GOMAXPROCS = v.mode, callers, opts.ClientProcs
	r.DecisionsPerSec = float64(r.Decisions) / v.took.Seconds()
	r.P50Ms, r.P99Ms = v.hist.QuantileMs(50), v.hist.QuantileMs(99)
	r.CPUPerDecisionUs = float64(v.cpu.Microseconds()) / float64(max(r.Decisions+r.Errors, 1))
	r.RedisBusy, r.RedisUsPerCall = v.srv.busy(), v.srv.usPerCall()
	if v.co != nil {
		r.PerPipeline = float64(v.co.Sent()) / float64(max(v.co.Batches(), 1))
		r.LingerUs = float64(*opts.Linger) / 1e3
	}
	return r
}

// segment is what one closed-loop run measured.
type segment struct {
	Decisions, Errors int64
	cpu, took         time.Duration
}

// processCPU is the user + system CPU time this process has used: on a shared machine the
// client's CPU per decision is steadier than its decisions/s.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// closedLoop runs callers goroutines, each deciding Zipf(0.99)-drawn tenants back to back for d
// (after a short warm-up that opens the connections), and measures each decision from call to
// return: closed loop, so latency here is service time, not schedule lag.
func closedLoop(ctx context.Context, lim limiter.Limiter, tenants []string, callers int, d time.Duration) (segment, *results.Histogram) {
	z, err := workload.NewZipf(uint64(len(tenants)), 0.99)
	if err != nil {
		panic(err) // len(tenants) and theta are constants in range
	}
	var (
		wg         sync.WaitGroup
		ok, failed atomic.Int64
		stop       atomic.Bool
		mu         sync.Mutex
		hist       = results.NewHistogram()
		ready      sync.WaitGroup
		begin      = make(chan struct{})
	)
	for i := range callers {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			h := results.NewHistogram()
			r := limiter.Request{Endpoint: "read", Cost: 1}
			for range 2 {
				r.Tenant, r.Now = tenants[z.Draw(rng)], time.Now()
				_, _ = lim.Allow(ctx, r)
			}
			ready.Done()
			<-begin
			var nOK, nErr int64
			for !stop.Load() && ctx.Err() == nil {
				r.Tenant = tenants[z.Draw(rng)]
				start := time.Now()
				r.Now = start
				_, err := lim.Allow(ctx, r)
				if err != nil {
					nErr++
					continue
				}
				h.Record(time.Since(start))
				nOK++
			}
			ok.Add(nOK)
			failed.Add(nErr)
			mu.Lock()
			hist.Merge(h)
			mu.Unlock()
		}()
	}
	ready.Wait()
	cpu0 := processCPU()
	start := time.Now()
	close(begin)
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	stop.Store(true)
	took := time.Since(start)
	wg.Wait()
	return segment{Decisions: ok.Load(), Errors: failed.Load(), cpu: processCPU() - cpu0, took: took}, hist
}
