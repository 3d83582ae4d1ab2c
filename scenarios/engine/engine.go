package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/lua"
	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/check"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/faults"
	"ratelab/workload"
)

// RunOptions are the knobs of one run that are not part of the scenario.
type RunOptions struct {
	// Out is the run directory; default out/<scenario>-<yyyymmdd-hhmmss>.
	Out string
	// Version is ratelab's version, recorded in the summary.
	Version string
	// StateFile locates the cluster started by `ratelab cluster up` (provider "running");
	// default cluster.DefaultStateFile().
	StateFile string
	// Logf receives progress messages; nil is silent.
	Logf func(format string, args ...any)
	// OnInterval is called with every per-second row as it is written.
	OnInterval func(results.Interval)
	// OnProgress, when set, receives a live snapshot about every ProgressEvery while the
	// schedule runs, from the collector's goroutine; it reads counters the driver keeps
	// anyway, so it costs the decisions nothing.
	OnProgress func(results.Progress)
	// PasswordFile holds the password of an external cluster (--password-file); without it the
	// password comes from $RATELAB_REDIS_PASSWORD. Passwords never come from argv or the spec.
	PasswordFile string
	// TLS are the CA, certificate and key files of an external cluster (--tls-ca, --tls-cert,
	// --tls-key); setting any of them makes the connections TLS.
	TLS *cluster.TLSFiles
	// RecordTrace, when set, is a file to write the run's schedule to after the run, as a trace
	// (workload/trace): every offered request's intended offset, tenant, endpoint and cost.
	// Replaying it (spec.Trace) with limiter.clock: schedule reproduces the run's decisions.
	RecordTrace string
	// AllowFaults lets a scenario's cluster faults run against an external cluster
	// (--allow-faults); without it such a run is refused before it starts.
	AllowFaults bool
	// Shard makes this run one of Count generators of one load (--shard i/N): it offers only
	// the requests of the tenants the shard owns (see workload.Shard). Zero: not sharded.
	Shard workload.Shard
}

// Result is what a run leaves: its directory and its summary.
type Result struct {
	Dir     string
	Summary *results.Summary
}

// Run executes one scenario: it starts (or attaches to) the cluster the limiter needs, drives the
// open-loop schedule, writes timeseries.csv as the run goes, and at the end summary.json,
// latency.hdr.json and scenario.yaml. Cancelling ctx stops the schedule early: the decisions
// already sent finish, and everything measured is written with interrupted: true. Local Redis
// nodes are stopped before Run returns.
func Run(ctx context.Context, spec *scenarios.Spec, opts RunOptions) (res *Result, err error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var rp *replay
	if spec.Trace != nil {
		// The trace fixes the schedule: duration, rate and tenants are the trace's.
		if spec, rp, err = loadReplay(spec); err != nil {
			return nil, err
		}
	}
	if err := checkShard(spec, opts); err != nil {
		return nil, err
	}
	started := time.Now()
	dir := opts.Out
	if dir == "" {
		dir = filepath.Join("out", spec.Name+"-"+started.Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, results.ScenarioFile), spec.YAML()); err != nil {
		return nil, err
	}

	sum := results.NewSummary(spec.Name, int64(spec.Seed), started)
	sum.Environment = results.Environment{
		Cores: runtime.NumCPU(), Go: runtime.Version(), Ratelab: opts.Version, Mode: spec.Limiter.Kind,
	}
	sum.Shard = shardSummary(opts.Shard)
	policy := spec.BucketPolicy()
	// Tariffs give each tenant endpoint its plan's bucket, reloaded while the run goes.
	var tariffs *tariffRun
	if spec.HasTariffs() {
		bgT, cancelT := context.WithCancel(context.WithoutCancel(ctx))
		defer cancelT()
		if tariffs, err = startTariffs(bgT, spec, logf); err != nil {
			return nil, err
		}
		policy = tariffs.cache.Lookup("tenant-0", spec.Endpoints[0].Name).Bucket
	}
	var bucketOpts []limiter.Option
	if tariffs != nil {
		bucketOpts = append(bucketOpts, limiter.WithPolicyFunc(tariffs.cache.BucketPolicyFunc()))
	}

	var (
		d      *driver
		leases []*limiter.LeaseLimiter
		lim    limiter.Limiter
		client *redis.ClusterClient
		cl     cluster.Cluster
		// cleanup deletes an external run's keys (once); cleanupNote then says what it did.
		cleanup     = func() error { return nil }
		cleanupNote string
		redir       *redirects
		secs        = int((time.Duration(spec.Duration) + time.Second - 1) / time.Second)
	)
	switch spec.Limiter.Kind {
	case "noop":
		lim = limiter.Noop{}
		sum.Environment.Provider = "none"
	case "memory":
		tb, err := limiter.NewTokenBucket(policy, bucketOpts...)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		lim = tb
		sum.Environment.Provider = "none"
		sum.Environment.Mode = "local"
	default:
		if err := checkProviderFaults(spec, opts); err != nil {
			return nil, err
		}
		cl, err = openCluster(ctx, spec, opts, logf)
		if err != nil {
			return nil, err
		}
		defer func() {
			if cerr := cl.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("stopping the cluster: %w", cerr)
			}
		}()
		sum.Environment.Provider = spec.Cluster.Provider
		sum.Environment.RedisVersion = cl.RedisVersion()
		sum.Environment.Primaries = len(cl.Primaries())
		if p := len(cl.Primaries()); p > 0 {
			sum.Environment.Replicas = (len(cl.Nodes()) - p) / p
		}
		sum.Environment.Mode = "central"
		redir = newRedirects(secs)
		client = newClusterClient(cl.ClientOptions(), time.Duration(spec.Limiter.Timeout), spec.Load.Concurrency, redir)
		defer client.Close()
		if spec.Cluster.Provider == "external" {
			// A shared cluster: every key of the run carries the run's prefix, and the run
			// deletes exactly those keys when it ends, also when it fails half-way.
			prefix, perr := runKeyPrefix(dir)
			if perr != nil {
				return nil, perr
			}
			client.AddHook(prefixHook{prefix: prefix})
			var once sync.Once
			cleanup = func() error {
				var cerr error
				once.Do(func() {
					cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
					defer cancel()
					n, err := cluster.CleanupPrefix(cctx, client, prefix)
					logf("external cluster: deleted %d keys with prefix %s", n, prefix)
					cleanupNote = fmt.Sprintf("; external cluster: keys prefixed %s, %d deleted after the run", prefix, n)
					if err != nil {
						cerr = fmt.Errorf("deleting the run's keys (prefix %s) from the external cluster: %w", prefix, err)
						cleanupNote += " (cleanup failed: " + err.Error() + ")"
					}
				})
				return cerr
			}
			defer func() {
				if cerr := cleanup(); cerr != nil && err == nil {
					err = cerr
				}
			}()
		}
		warmPools(ctx, client, spec.Load.Concurrency)
		if spec.Limiter.Kind != "token-bucket" && spec.Limiter.Kind != "lease" {
			sum.Environment.Mode = "central " + spec.Limiter.Kind
			if lim, err = newAlgorithm(ctx, spec, client); err != nil {
				return nil, err
			}
			break
		}
		if spec.Limiter.Kind == "lease" {
			sum.Environment.Mode = "lease"
			if leases, err = newLeases(ctx, spec, client, policy); err != nil {
				return nil, err
			}
			break
		}
		if err := preloadScript(ctx, client); err != nil {
			return nil, err
		}
		rb, mode, closeBucket, err := newCentralBucket(spec, client, policy, bucketOpts)
		if err != nil {
			return nil, err
		}
		defer closeBucket() // after the driver: what a coalescer has queued is sent
		sum.Environment.Mode += mode
		bg, cancelBG := context.WithCancel(context.WithoutCancel(ctx))
		defer cancelBG()
		policyFor := func(string, string) limiter.BucketPolicy { return policy }
		if tariffs != nil {
			policyFor = tariffs.cache.BucketPolicyFunc()
		}
		lim, err = withFailPolicy(bg, spec, rb, client, policyFor, func(r limiter.Request, k limiter.ErrorKind) {
			if d != nil {
				d.storeFailure(r, k)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("fail policy: %w", err)
		}
	}

	pacer, keySrc, err := newSchedule(spec, rp)
	if err != nil {
		return nil, err
	}
	names := endpointNames(spec)
	tenants := tenantNames(spec.Tenants.Count)
	if rp != nil {
		tenants = rp.tenants
	}
	checker := newEnvelope(spec, tenants, names, policy, tariffs)
	d = newDriver(spec, lim, checker, tenants, names, redir, client != nil)
	d.shard = opts.Shard
	d.tariffs = tariffs // each row records the policy version live at its end
	d.onProgress = opts.OnProgress
	for _, l := range leases {
		d.gateways = append(d.gateways, l)
	}
	if client != nil {
		d.reload = func() { client.ReloadState(context.Background()) }
	}
	stopFaults := func() {}
	if len(spec.Faults) > 0 {
		keyOf := func(tenant string) string { return limiter.KeyFor(tenant, names[0]) }
		h := faults.Hooks{
			HotKey: keyOf(tenants[0]), KeyOf: keyOf, CauseFor: checker.CauseFor, Logf: logf,
			SlotTraffic: d.slotTraffic, Gateways: d.nGateways,
			OnInject: func(at float64) {
				if sec := int(at); sec >= 0 && sec < len(d.faultsAt) {
					d.faultsAt[sec].Add(1)
				}
			},
		}
		if d.skew != nil {
			h.SetSkew = func(g int, off time.Duration) { d.skew[g].Store(int64(off)) }
		}
		if len(leases) > 0 {
			h.DropGateway = func(i int) int64 {
				before := leases[i].LostTokens()
				leases[i].Drop()
				return leases[i].LostTokens() - before
			}
		}
		d.faults = faults.New(cl, spec.Faults, h)
		d.onStart = d.faults.Start
		stopFaults = d.faults.Stop
	}
	// A decision that succeeded ran within its timeout of its start, so two requests that
	// reached Redis in another order than the envelope sees them started less than a timeout
	// apart: that bounds how long a contested denial must stay open.
	checker.SetReorderWindow(max(2*time.Duration(spec.Limiter.Timeout), check.DefaultReorderWindowMs*time.Millisecond).Milliseconds(), d.withdraw)

	tsFile, err := os.Create(filepath.Join(dir, results.TimeseriesFile))
	if err != nil {
		return nil, err
	}
	defer tsFile.Close()
	tsw, err := results.NewTimeseriesWriter(tsFile)
	if err != nil {
		return nil, err
	}
	// One histogram per second beside the rows: what a merge of shards needs for its percentiles.
	hsFile, err := os.Create(filepath.Join(dir, results.SecondsHistogramFile))
	if err != nil {
		return nil, err
	}
	defer hsFile.Close()
	hsw, err := results.NewSecondsHistogramWriter(hsFile)
	if err != nil {
		return nil, err
	}
	total := &secStats{hist: results.NewHistogram()}
	var rows []results.Interval
	var writeErr error
	var central int64
	var offered, sent, dropped, behind int64
	// The footprint's warm-up sample is taken after a tenth of the run unless slo.warmup says
	// when: by then pools, histograms and the collector's headroom have grown to their working
	// size, so later growth means a leak. A later warm-up also keeps the sample at a tenth
	// (early), and a third sample halfway from warm-up to the end tells a leak (it keeps
	// growing) from a step (the allocator's footprint after the first transient peaks).
	// A sample is taken as second sec is written, sec+1 seconds into the run.
	earlySec := max(secs/10-1, 0)
	warmSec := earlySec
	if w := spec.SLO.Warmup; w != nil {
		warmSec = max(int(time.Duration(*w)/time.Second)-1, 0)
	}
	midSec := -1
	if secs >= 20 && (warmSec+secs)/2 > warmSec {
		midSec = (warmSec + secs) / 2
	}
	// Settled samples (see sampleFootprint) only where the spec judges memory growth.
	settle := spec.SLO.RSSGrowth != nil || spec.SLO.HeapGrowth != nil
	sum.Process.Settled = settle
	emit := func(sec int, s *secStats) {
		if sec == earlySec && earlySec < warmSec {
			f := sampleFootprint(settle)
			sum.Process.EarlyS, sum.Process.RSSEarlyMB, sum.Process.AnonEarlyMB = float64(sec+1), f.rssMB, f.anonMB
		}
		if sec == warmSec {
			f := sampleFootprint(settle)
			sum.Process.WarmS = float64(sec + 1)
			sum.Process.RSSWarmMB, sum.Process.HeapWarmMB, sum.Process.GoroutinesWarm = f.rssMB, f.heapMB, f.goroutines
			sum.Process.AnonWarmMB = f.anonMB
			sum.Process.Warm = &f.mem
		}
		if sec == midSec {
			f := sampleFootprint(settle)
			sum.Process.MidS = float64(sec + 1)
			sum.Process.RSSMidMB, sum.Process.AnonMidMB = f.rssMB, f.anonMB
		}
		iv := d.interval(sec, s)
		offered += iv.Offered
		sent += iv.Sent
		dropped += iv.Dropped
		behind += d.behind[sec].Load()
		central += iv.CentralOps
		total.add(s)
		rows = append(rows, iv)
		if err := tsw.Write(iv); err != nil && writeErr == nil {
			writeErr = err
		}
		if err := hsw.Write(sec, s.hist); err != nil && writeErr == nil {
			writeErr = err
		}
		if opts.OnInterval != nil {
			opts.OnInterval(iv)
		}
	}
	logf("running %s: %.0f requests/s offered for %s (%s limiter, %d workers, max in flight %d)",
		spec.Name, spec.Load.Rate, time.Duration(spec.Duration), spec.Limiter.Kind, spec.Load.Concurrency, spec.Load.MaxInflight)
	d.run(ctx, pacer, keySrc, emit)
	stopFaults()
	sum.Process.RSSPeakMB = peakRSSMB()
	f := sampleFootprint(settle)
	sum.Process.RSSEndMB, sum.Process.HeapEndMB, sum.Process.GoroutinesEnd = f.rssMB, f.heapMB, f.goroutines
	sum.Process.AnonEndMB = f.anonMB
	sum.Process.End = &f.mem
	ran := time.Duration(d.elapsed.Load())
	total.add(d.late())

	sum.Interrupted = d.interrupted.Load()
	sum.DurationS = ran.Seconds()
	fillSummary(sum, spec, d, total, ran, offered, sent, dropped, behind)
	if InjectedDelay > 0 {
		sum.Load.Note += fmt.Sprintf("; TEST BUILD (-tags ratelab_inject_delay): every decision slept %v before the limiter", InjectedDelay)
	}
	var recordErr error
	if opts.RecordTrace != "" {
		n, rerr := recordSchedule(opts.RecordTrace, spec, rp, d.clockBase, ran, d.seconds)
		recordErr = rerr
		sum.Load.Note += fmt.Sprintf("; schedule recorded to %s (%d requests, sent or dropped)", opts.RecordTrace, n)
	}
	if rp != nil {
		sum.Load.Note += fmt.Sprintf("; replay of %s at speed %g (%d requests, %d tenants)", rp.path, rp.speed, len(rp.tr.Records), len(rp.tenants))
	}
	if client != nil {
		fillCentral(ctx, sum, client, redir, d, tenants, names, ran)
	} else {
		sum.HotKeys = hotKeys(d, tenants, names, nil)
	}
	if len(leases) > 0 {
		fillLeases(sum, leases, ran)
	}
	if tc, ok := checker.(*check.TwoTier); ok {
		over, denied := tc.QuotaTotals()
		sum.Load.Note += fmt.Sprintf("; two tiers: quota %d per %s per tenant; %d allowed requests beyond the quota (in overspend), %d denials the full quota explains",
			spec.Policy.Quota.Limit, time.Duration(spec.Policy.Quota.Window), over, denied)
	}
	if tariffs != nil {
		sum.Load.Note += "; " + tariffs.note(d.base)
	}
	if d.faults != nil {
		var bound float64
		sum.Faults, bound = d.faults.Recorded()
		sum.Overspend.BoundTokens += bound
		faults.MeasureRecovery(sum.Faults, rows)
	}
	cleanupErr := cleanup()
	sum.Load.Note += cleanupNote + shardNote(opts.Shard)
	sum.SLO = spec.SLO.Evaluate(sum)
	if writeErr != nil {
		return &Result{Dir: dir, Summary: sum}, fmt.Errorf("writing %s: %w", results.TimeseriesFile, writeErr)
	}
	if err := writeLedger(dir, d); err != nil {
		return &Result{Dir: dir, Summary: sum}, err
	}
	if err := results.WriteRunFiles(dir, sum, total.hist); err != nil {
		return &Result{Dir: dir, Summary: sum}, err
	}
	return &Result{Dir: dir, Summary: sum}, errors.Join(cleanupErr, recordErr)
}

// endpointNames are spec's endpoints' names, in order.
func endpointNames(spec *scenarios.Spec) []string {
	names := make([]string, len(spec.Endpoints))
	for i, e := range spec.Endpoints {
		names[i] = e.Name
	}
	return names
}

// newCentralBucket builds the Redis token bucket of kind token-bucket with the spec's clock and
// transport (plain: one EVALSHA per decision; coalesce: concurrent decisions batched into one
// pipeline per primary). mode is what to add to the summary's environment.mode; closeFn flushes
// and stops a coalescer (a no-op for plain calls). Run and OpenTarget (via: http) share it.
func newCentralBucket(spec *scenarios.Spec, c *redis.ClusterClient, policy limiter.BucketPolicy, opts []limiter.Option) (lim limiter.Limiter, mode string, closeFn func(), err error) {
	opts = append(opts, limiter.WithTimeout(time.Duration(spec.Limiter.Timeout)))
	if spec.Limiter.Clock == scenarios.ClockRedis {
		opts = append(opts, limiter.WithRedisClock())
		mode += ", redis clock"
	}
	closeFn = func() {}
	if spec.Limiter.Transport == scenarios.TransportCoalesce {
		cb, err := limiter.NewCoalescingBucket(c, policy, limiter.WithBucketOptions(opts...))
		if err != nil {
			return nil, "", nil, fmt.Errorf("policy: %w", err)
		}
		return cb, mode + ", coalescing transport", func() { cb.Close() }, nil
	}
	if lim, err = limiter.NewRedisTokenBucket(c, policy, opts...); err != nil {
		return nil, "", nil, fmt.Errorf("policy: %w", err)
	}
	return lim, mode, closeFn, nil
}

// preloadScript loads the script on every primary before the clock starts, so NOSCRIPT counts
// in the run mean what they say (a flush, a restart or a promoted replica), not a cold cache.
func preloadScript(ctx context.Context, c *redis.ClusterClient) error {
	err := setupRetry(ctx, func() error {
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.ScriptLoad(ctx, lua.TokenBucket).Err()
		})
	})
	if err != nil {
		return fmt.Errorf("loading the token-bucket script on the primaries: %w", err)
	}
	return nil
}

// traffic builds the key distribution and endpoint mix a spec describes.
func traffic(spec *scenarios.Spec) (workload.KeyDist, *workload.Mix, []string, error) {
	keys, err := keyDist(spec)
	if err != nil {
		return nil, nil, nil, err
	}
	names := make([]string, len(spec.Endpoints))
	weights := make([]float64, len(spec.Endpoints))
	for i, e := range spec.Endpoints {
		names[i], weights[i] = e.Name, e.Weight
	}
	mix, err := workload.NewMix(names, weights)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("endpoints: %w", err)
	}
	return keys, mix, names, nil
}

// newAlgorithm builds the Redis limiter of a non-token-bucket kind and loads its script on every
// primary before the clock starts. GCRA is judged against the token-bucket envelope of the same
// rate and burst (it is the same limit, kept as a theoretical arrival time); the window kinds
// against "at most limit in any window".
func newAlgorithm(ctx context.Context, spec *scenarios.Spec, c *redis.ClusterClient) (limiter.Limiter, error) {
	timeout := limiter.WithTimeout(time.Duration(spec.Limiter.Timeout))
	w, n := time.Duration(spec.Policy.Window), spec.Policy.Limit
	var (
		lim interface {
			limiter.Limiter
			Load(context.Context) error
		}
		err error
	)
	switch spec.Limiter.Kind {
	case "gcra":
		b := spec.BucketPolicy()
		lim, err = limiter.NewRedisGCRA(c, limiter.GCRAPolicy{Rate: b.Rate, Burst: b.Burst}, timeout)
	case "fixed-window":
		lim, err = limiter.NewRedisFixedWindow(c, limiter.FixedWindowPolicy{Window: w, Limit: n}, timeout)
	case "sliding-window":
		lim, err = limiter.NewRedisSlidingWindow(c, limiter.SlidingWindowPolicy{Window: w, Limit: n}, timeout)
	case "sliding-log":
		lim, err = limiter.NewRedisSlidingLog(c, limiter.SlidingLogPolicy{Window: w, Limit: n}, timeout)
	case "two-tier":
		lim, err = limiter.NewRedisTwoTier(c, limiter.TwoTierPolicy{
			Bucket: spec.BucketPolicy(),
			Quota:  spec.Policy.Quota.Limit, QuotaWindow: time.Duration(spec.Policy.Quota.Window),
		}, timeout)
	default:
		return nil, fmt.Errorf("limiter.kind %q: no Redis implementation", spec.Limiter.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := setupRetry(ctx, func() error { return lim.Load(ctx) }); err != nil {
		return nil, fmt.Errorf("loading the %s script on the primaries: %w", spec.Limiter.Kind, err)
	}
	return lim, nil
}

// newLeases builds one LeaseLimiter per simulated gateway, all on the same cluster, and loads the
// lease script on every primary before the clock starts.
func newLeases(ctx context.Context, spec *scenarios.Spec, c *redis.ClusterClient, p limiter.BucketPolicy) ([]*limiter.LeaseLimiter, error) {
	cfg := spec.Limiter.Lease
	refresh := scenarios.DefaultLeaseRefresh // a spec built in code may leave it nil
	if cfg.Refresh != nil {
		refresh = *cfg.Refresh
	}
	out := make([]*limiter.LeaseLimiter, cfg.Gateways)
	for i := range out {
		l, err := limiter.NewLeaseLimiter(c, p, cfg.Size,
			limiter.WithLeaseTTL(time.Duration(cfg.TTL)), limiter.WithLeaseTimeout(time.Duration(spec.Limiter.Timeout)),
			limiter.WithLeaseRefresh(refresh))
		if err != nil {
			return nil, fmt.Errorf("limiter.lease: %w", err)
		}
		out[i] = l
	}
	if err := setupRetry(ctx, func() error { return out[0].Load(ctx) }); err != nil {
		return nil, fmt.Errorf("loading the lease script on the primaries: %w", err)
	}
	return out, nil
}

// fillLeases reports what the lease layer did: the overspend bound is the tokens leased out and
// not yet spent at the end (no idle episode can overspend more than the unused leases), and the
// summary's note says how many tokens expired or were dropped unused (availability lost).
func fillLeases(sum *results.Summary, leases []*limiter.LeaseLimiter, ran time.Duration) {
	var outstanding, lost, calls, waited, refreshes, refreshErrs int64
	for _, l := range leases {
		outstanding += l.Outstanding()
		lost += l.LostTokens()
		calls += l.CentralCalls()
		waited += l.Waited()
		refreshes += l.Refreshes()
		refreshErrs += l.RefreshErrors()
	}
	sum.Overspend.BoundTokens += float64(outstanding)
	decisions := max(sum.Load.Decisions, 1)
	sum.Load.Note += fmt.Sprintf("; leases: %d gateways, %d central lease fetches (%.4f per decision, %.0fx fewer than one per decision), %d tokens expired unused, %d outstanding at the end",
		len(leases), calls, float64(calls)/float64(decisions), float64(decisions)/float64(max(calls, 1)), lost, outstanding)
	// The decisions that waited for Redis are the ones whose latency includes a round trip; the
	// rest were decided in memory.
	sum.Load.Note += fmt.Sprintf("; %d decisions (%.2f%%) waited for a lease fetch, %d refresh-ahead fetches (%d failed)",
		waited, 100*float64(waited)/float64(decisions), refreshes, refreshErrs)
}

// setupRetry runs a set-up step (before the clock starts) up to three times: the client's socket
// timeouts are the decision budget, which a busy machine can miss for a SCRIPT LOAD. Decisions
// themselves are never retried.
func setupRetry(ctx context.Context, step func() error) error {
	var err error
	for attempt := range 3 {
		if err = step(); err == nil {
			return nil
		}
		t := time.NewTimer(time.Duration(attempt+1) * 200 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return err
}

// warmPools opens up to workers connections to every node before the clock starts: dialing
// them during the run would put connection set-up into the first second's latency and, with a
// budget of a few milliseconds, turn it into fail-open decisions. Replicas are warmed too, as a
// gateway that expects failovers would: a promoted replica then takes decisions on open
// connections instead of dialing a pool's worth under the decision budget, and the client's
// memory is at its working size from the start (a soak judges growth against it).
func warmPools(ctx context.Context, c *redis.ClusterClient, workers int) {
	_ = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		var wg sync.WaitGroup
		for range min(workers, n.Options().PoolSize) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = n.Ping(ctx).Err()
			}()
		}
		wg.Wait()
		return nil
	})
}

func keyDist(spec *scenarios.Spec) (workload.KeyDist, error) {
	n := uint64(spec.Tenants.Count)
	var (
		k   workload.KeyDist
		err error
	)
	switch spec.Tenants.Distribution {
	case "uniform":
		k, err = workload.NewUniform(n)
	case "hotspot":
		k, err = workload.NewHotspot(n, uint64(spec.Tenants.HotKeys), spec.Tenants.HotShare)
	default:
		k, err = workload.NewZipf(n, spec.Tenants.Theta)
	}
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	return k, nil
}

func newPacer(spec *scenarios.Spec) (workload.Pacer, error) {
	var (
		p   workload.Pacer
		err error
	)
	if spec.Load.Pacer == "poisson" {
		p, err = workload.NewPoisson(spec.Load.Rate, time.Duration(spec.Duration), spec.Seed)
	} else {
		p, err = workload.NewConstant(spec.Load.Rate, time.Duration(spec.Duration))
	}
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	return p, nil
}

// tenantNames names tenants by Zipf rank: tenant-0 is the hottest.
func tenantNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "tenant-" + strconv.Itoa(i)
	}
	return out
}
