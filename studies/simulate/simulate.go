package simulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"ratelab/results"
	"ratelab/studies/capacity"
)

// PrimaryStats is one primary in the steady-state phase.
type PrimaryStats struct {
	Primary int `json:"shard"`
	// Simulated is false for a primary left out of a sampled run (SampledShare < 1): its numbers
	// are then the expected calls/s and calls/s x mean service time, not simulated.
	Simulated bool `json:"simulated"`
	// Utilisation is the share of the measured time the primary's thread was busy.
	Utilisation float64 `json:"utilisation"`
	// CentralOpsPerS is the script calls per second that arrived at it.
	CentralOpsPerS float64 `json:"central_ops_per_s"`
}

// FailoverResult is the failover phase: one primary simulated alone through its outage.
type FailoverResult struct {
	Primary int `json:"shard"`
	// OutageS is NodeTimeout + Election: how long the primary served nothing.
	OutageS float64 `json:"outage_s"`
	// OutageDecisions were decided by the fail policy (FailOpen, FailClosed or Errors of them).
	OutageDecisions int64 `json:"outage_decisions"`
	FailOpen        int64 `json:"fail_open"`
	FailClosed      int64 `json:"fail_closed"`
	Errors          int64 `json:"errors"`
	// LocalDuringOutage counts decisions served from leases while the primary was down.
	LocalDuringOutage int64 `json:"local_during_outage"`
	// LostTokens is the replication window: calls applied on the dead primary in its last
	// ReplicationLag, times the tokens each debits (1, or the lease size). They come back.
	LostTokens float64 `json:"lost_tokens"`
	// FailOpenExcess bounds what fail-open let through beyond each key's bucket over the outage:
	// sum over keys of max(0, allowed - (burst + rate*outage)).
	FailOpenExcess float64 `json:"fail_open_excess_tokens"`
	// OverspendBoundTokens = LostTokens + FailOpenExcess.
	OverspendBoundTokens float64 `json:"overspend_bound_tokens"`
	// P99 of the primary's decisions that arrived during the outage and in the second after it.
	P99DuringMs float64 `json:"p99_during_ms"`
	P99AfterMs  float64 `json:"p99_after_ms"`
}

// Result is what a simulation predicts.
type Result struct {
	Config Config `json:"config"`
	// SimulatedS is the steady-state horizon and MeasuredS the part measured (after warm-up).
	SimulatedS float64 `json:"simulated_s"`
	MeasuredS  float64 `json:"measured_s"`
	// SampledShare is the share of traffic on the primaries simulated: 1, or less when the run
	// simulated a sample of primaries and scaled its totals by 1/SampledShare.
	SampledShare float64 `json:"sampled_share"`
	// ThroughputRPS counts decisions completed (answered or timed out) per measured second.
	ThroughputRPS float64 `json:"throughput_rps"`
	// Decisions, Timeouts and LocalDecisions count decisions of measured arrivals.
	Decisions int64 `json:"decisions"`
	Timeouts  int64 `json:"timeouts"`
	// Dropped counts arrivals beyond MaxInflight (not decided).
	Dropped        int64   `json:"dropped"`
	LocalDecisions int64   `json:"local_decisions"`
	CentralOpsPerS float64 `json:"central_ops_per_s"`
	MeanMs         float64 `json:"mean_ms"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	P999Ms         float64 `json:"p999_ms"`
	// HotPrimary is the busiest primary and HotPrimaryP99Ms its decisions' p99.
	HotPrimary      int            `json:"hot_shard"`
	HotPrimaryP99Ms float64        `json:"hot_shard_p99_ms"`
	Primaries       []PrimaryStats `json:"shards"`
	// Saturated lists primaries busy over 99% of the time: their queues grow without bound.
	Saturated []int           `json:"saturated"`
	Failover  *FailoverResult `json:"failover,omitempty"`
	// HostUtilisation is Rate / Host.CapacityRPS when the model is co-located (0 otherwise):
	// at 1 or more the machine cannot carry the rate.
	HostUtilisation float64 `json:"host_utilisation,omitempty"`
	// GatewayCores is Rate x ClientCPUUs: the client CPU the rate needs on the gateways' hosts.
	GatewayCores float64 `json:"gateway_cores,omitempty"`
	// ElapsedS is the wall-clock time the simulation took.
	ElapsedS float64 `json:"elapsed_s"`

	hist *results.Histogram // the measured decisions' latencies (ValidateCoLocated pools them)
}

// Simulate simulates cfg: a steady-state phase over all primaries and, with cfg.Failover, a phase
// that fails one primary.
func Simulate(cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	p := planSteadyState(cfg)
	e := newModel(cfg, 1, p.only, p.end, p.warm, p.hot)
	if cfg.Lease > 1 {
		e.ramp = p.warm / 2
	}
	e.run()
	res := p.result(e)
	busiest := p.addPrimaries(res, e)
	if f := cfg.Failover; f != nil {
		primary := f.Primary
		if primary < 0 {
			primary = busiest
		}
		res.Failover = simulateFailover(cfg, primary)
	}
	res.ElapsedS = time.Since(began).Seconds()
	return res, nil
}

// steadyState is the plan of the steady-state phase: how long it is, which primaries it simulates
// and what each primary is expected to carry.
type steadyState struct {
	cfg Config
	// expected is each primary's expected central calls/s and hot the primary expected busiest.
	expected []float64
	hot      int
	// warm is the warm-up, measured the measured time after it and end their sum, in seconds.
	warm, measured, end float64
	// only marks the primaries simulated (nil: every primary) and share the traffic share they
	// carry.
	only  []bool
	share float64
}

// planSteadyState spreads cfg's traffic over the primaries by slot and bounds the phase: at most
// MaxRequests arrivals measured, after a warm-up of a ninth of that (with leases at least one
// TTL: leases start empty, and until one TTL has passed every gateway's first request for a key
// fetches, which is not the steady state).
func planSteadyState(cfg Config) steadyState {
	pop, _ := capacity.NewPopularity(cfg.Tenants, cfg.Theta)
	p := steadyState{cfg: cfg, expected: capacity.LoadBySlot(pop, cfg.Rate, cfg.cost()).Primaries(cfg.Primaries), share: 1}
	for i, v := range p.expected {
		if v > p.expected[p.hot] {
			p.hot = i
		}
	}
	p.measured = math.Min(cfg.Horizon.Seconds(), float64(cfg.MaxRequests)/cfg.Rate)
	p.warm = p.measured / 9
	if cfg.Lease > 1 {
		p.warm = math.Max(p.warm, cfg.LeaseTTL.Seconds())
	}
	p.end = p.warm + p.measured
	arrivalShare := capacity.LoadBySlot(pop, 1, func(r float64) float64 { return r }).Primaries(cfg.Primaries)
	p.only, p.share = samplePrimaries(cfg, arrivalShare, p.hot, p.end)
	return p
}

// samplePrimaries picks the primaries to simulate when every primary's arrivals over end seconds
// would exceed twice the request budget (the warm-up of leases at millions per second): the
// busiest, hot, first, then others in random order while the budget allows. It returns nil (every
// primary) and 1 when the whole cluster fits, else the primaries picked and the share of arrivals
// they carry.
func samplePrimaries(cfg Config, arrivalShare []float64, hot int, end float64) ([]bool, float64) {
	budget := 2 * float64(cfg.MaxRequests)
	if cfg.Rate*end <= budget {
		return nil, 1
	}
	only, share := make([]bool, cfg.Primaries), 0.0
	r := rand.New(rand.NewPCG(cfg.Seed, 99))
	for i, s := range append([]int{hot}, r.Perm(cfg.Primaries)...) {
		if only[s] || (i > 0 && (share+arrivalShare[s])*cfg.Rate*end > budget) {
			continue
		}
		only[s] = true
		share += arrivalShare[s]
	}
	return only, share
}

// result is the steady state's headline numbers from the model e that ran it, totals scaled up
// by the share of traffic simulated.
func (p steadyState) result(e *model) *Result {
	cfg, measured, share := p.cfg, p.measured, p.share
	res := &Result{
		Config: cfg, SimulatedS: p.end, MeasuredS: measured, SampledShare: share,
		ThroughputRPS: float64(e.c.completedInWindow) / measured / share,
		Decisions:     e.c.decisions, Timeouts: e.c.timeouts, Dropped: e.c.dropped, LocalDecisions: e.c.local,
		CentralOpsPerS: float64(e.c.central) / measured / share,
		MeanMs:         1e3 * e.c.latencySum / math.Max(float64(e.c.decisions), 1),
		P50Ms:          e.hist.QuantileMs(50), P99Ms: e.hist.QuantileMs(99), P999Ms: e.hist.QuantileMs(99.9),
		Saturated:    []int{},
		hist:         e.hist,
		GatewayCores: cfg.Rate * cfg.ClientCPUUs / 1e6,
	}
	if cfg.Host != nil {
		res.HostUtilisation = cfg.Rate / cfg.Host.CapacityRPS
	}
	res.HotPrimary = e.hotPrimary
	res.HotPrimaryP99Ms = e.hotHist.QuantileMs(99)
	return res
}

// addPrimaries fills res's per-primary numbers from e and returns the busiest primary. A primary
// left out of a sample gets its expected calls, scaled by how the simulated primaries' calls
// compared with their expectation (the expectation charges leases their worst case).
func (p steadyState) addPrimaries(res *Result, e *model) (busiest int) {
	var simOps, simExpected float64
	for i := range e.primaries {
		if p.only == nil || p.only[i] {
			simOps += float64(e.primaries[i].ops) / p.measured
			simExpected += p.expected[i]
		}
	}
	scale := 1.0
	if simExpected > 0 {
		scale = simOps / simExpected
	}
	busy := -1.0
	for i := range e.primaries {
		sh := &e.primaries[i]
		st := PrimaryStats{Primary: i, Simulated: true, Utilisation: sh.busyMeasured / p.measured, CentralOpsPerS: float64(sh.ops) / p.measured}
		if p.only != nil && !p.only[i] {
			ops := p.expected[i] * scale
			st = PrimaryStats{Primary: i, Utilisation: ops * p.cfg.Service.MeanUs / 1e6, CentralOpsPerS: ops}
		}
		res.Primaries = append(res.Primaries, st)
		if st.Utilisation > 0.99 {
			res.Saturated = append(res.Saturated, i)
		}
		if st.Utilisation > busy {
			busiest, busy = i, st.Utilisation
		}
	}
	return busiest
}

// simulateFailover simulates primary alone from 0 to the outage's end plus 1 s.
func simulateFailover(cfg Config, primary int) *FailoverResult {
	f := cfg.Failover
	outage := (f.NodeTimeout + f.Election).Seconds()
	// With leases the primary first warms up for a TTL (ramping in, as in the steady state), so
	// the failure hits established leases.
	warm := 0.0
	if cfg.Lease > 1 {
		warm = cfg.LeaseTTL.Seconds()
	}
	down := warm + f.At.Seconds()
	end := down + outage + 1
	only := make([]bool, cfg.Primaries)
	only[primary] = true
	e := newModel(cfg, 2, only, end, 0, primary)
	e.ramp = warm / 2
	e.fo, e.fprimary = f, primary
	e.downAt, e.upAt = down, down+outage
	e.outageByKey = map[uint64]int64{}
	e.during, e.after = results.NewHistogram(), results.NewHistogram()
	e.run()
	out := &FailoverResult{
		Primary: primary, OutageS: outage, OutageDecisions: e.outageDecisions,
		FailOpen: e.c.failOpen, FailClosed: e.c.failClosed, Errors: e.c.failErrors,
		LocalDuringOutage: e.localOutage,
		P99DuringMs:       e.during.QuantileMs(99), P99AfterMs: e.after.QuantileMs(99),
	}
	perCall := 1.0
	if cfg.Lease > 1 {
		perCall = float64(cfg.Lease)
	}
	out.LostTokens = float64(e.lostOps) * perCall
	allowance := f.PolicyBurst + f.PolicyRate*outage
	for _, n := range e.outageByKey {
		out.FailOpenExcess += math.Max(0, float64(n)-allowance)
	}
	out.OverspendBoundTokens = out.LostTokens + out.FailOpenExcess
	return out
}

// Text renders a result for a terminal: the headline numbers, the busiest primaries, the failover.
func (r *Result) Text() string {
	var b strings.Builder
	c := r.Config
	mode := "central (one script call per decision)"
	if c.Lease > 1 {
		mode = fmt.Sprintf("leases of %d tokens, %d gateways, TTL %v", c.Lease, c.Gateways, c.LeaseTTL)
	}
	fmt.Fprintf(&b, "simulated %d primaries at %.0f decisions/s (%d tenants, Zipf %g), %s\n", c.Primaries, c.Rate, c.Tenants, c.Theta, mode)
	fmt.Fprintf(&b, "  service     %s mean %.1f µs cv %.2f per call; client time p50 %.3f ms\n", c.Service.Kind, c.Service.MeanUs, c.Service.CV, c.Client.median())
	if h := c.Host; h != nil {
		fmt.Fprintf(&b, "  host        co-located: %.0f decisions/s at saturation (%.0f%% used), off %.1f%% of the time in gaps of %.1f ms mean\n",
			h.CapacityRPS, 100*r.HostUtilisation, 100*h.OffFraction, h.OffMeanMs)
	}
	if r.GatewayCores > 0 {
		fmt.Fprintf(&b, "  gateways    %.2f cores of client CPU (%.0f µs per decision)\n", r.GatewayCores, c.ClientCPUUs)
	}
	fmt.Fprintf(&b, "  horizon     %.3f s simulated (%.3f s measured after warm-up), %d decisions, %.2f s wall\n", r.SimulatedS, r.MeasuredS, r.Decisions, r.ElapsedS)
	if r.SampledShare < 1 {
		fmt.Fprintf(&b, "  sampled     the busiest primary and others carrying %.1f%% of the traffic were simulated; totals scaled up, other primaries from expected load\n", 100*r.SampledShare)
	}
	fmt.Fprintf(&b, "  throughput  %.0f decisions/s (offered %.0f); timeouts %d, dropped %d\n", r.ThroughputRPS, c.Rate, r.Timeouts, r.Dropped)
	fmt.Fprintf(&b, "  central     %.0f calls/s (%.4f per offered decision)\n", r.CentralOpsPerS, r.CentralOpsPerS/c.Rate)
	fmt.Fprintf(&b, "  latency     p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms; busiest primary %d p99 %.3f ms\n", r.P50Ms, r.P99Ms, r.P999Ms, r.HotPrimary, r.HotPrimaryP99Ms)
	sorted := append([]PrimaryStats(nil), r.Primaries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Utilisation > sorted[j].Utilisation })
	mean := 0.0
	for _, s := range r.Primaries {
		mean += s.Utilisation / float64(len(r.Primaries))
	}
	fmt.Fprintf(&b, "  utilisation mean %.1f%%; busiest:", 100*mean)
	for _, s := range sorted[:min(5, len(sorted))] {
		fmt.Fprintf(&b, " #%d %.1f%% (%.0f calls/s)", s.Primary, 100*s.Utilisation, s.CentralOpsPerS)
	}
	b.WriteString("\n")
	if len(r.Saturated) > 0 {
		fmt.Fprintf(&b, "  SATURATED   primaries %v are busy >99%%: their queues grow for as long as the load lasts\n", r.Saturated)
	}
	if f := r.Failover; f != nil {
		fo := c.Failover
		fmt.Fprintf(&b, "failover of primary %d at %v: unavailable %.2f s (node timeout %v + election %v), fail %s\n",
			f.Primary, fo.At, f.OutageS, fo.NodeTimeout, fo.Election, fo.Fail)
		fmt.Fprintf(&b, "  outage      %d decisions by the fail policy (open %d, closed %d, error %d); %d served from leases\n",
			f.OutageDecisions, f.FailOpen, f.FailClosed, f.Errors, f.LocalDuringOutage)
		fmt.Fprintf(&b, "  latency     p99 %.3f ms during, %.3f ms in the second after\n", f.P99DuringMs, f.P99AfterMs)
		fmt.Fprintf(&b, "  overspend   bound %.0f tokens = lost replication window %.0f (%v of calls) + fail-open beyond the buckets %.0f\n",
			f.OverspendBoundTokens, f.LostTokens, fo.ReplicationLag, f.FailOpenExcess)
	}
	return b.String()
}

func (e Empirical) median() float64 {
	if len(e) == 0 {
		return 0
	}
	for i := 1; i < len(e); i++ {
		if e[i].P >= 0.5 {
			a, b := e[i-1], e[i]
			if b.P == a.P {
				return b.Ms
			}
			return a.Ms + (b.Ms-a.Ms)*(0.5-a.P)/(b.P-a.P)
		}
	}
	return e[len(e)-1].Ms
}
