package simulate

import (
	"math"
	"math/rand/v2"
	"time"

	"ratelab/cluster"
	"ratelab/results"
	"ratelab/studies/capacity"
	"ratelab/workload"
)

// job is one call waiting for or in service at a primary.
type job struct {
	arrival  float64
	sent     float64 // when the call left the client (after the co-located host's CPU): the timeout runs from here
	key      uint64
	primary  int32
	measured bool
	lease    *leaseState // set when the call fetches a lease
}

// primaryState is one primary: a single-threaded FIFO server.
type primaryState struct {
	queue        []job
	head         int
	cur          job
	busy, down   bool
	epoch        uint32
	busyMeasured float64 // busy seconds inside the measured window
	ops          int64   // central calls that arrived inside the measured window
}

type leaseKey struct {
	gateway int32
	key     uint64
}

// leaseState is one gateway's lease on one key.
type leaseState struct {
	tokens  int64
	expires float64
	pending bool
	waiters []job // requests that arrived while the fetch was in flight; they take its tokens
}

// counters of one phase.
type counters struct {
	arrivals, decisions, local, central, timeouts int64
	dropped                                       int64 // measured arrivals beyond MaxInflight
	inflight                                      int64 // arrived, not yet decided (every arrival)
	completedInWindow                             int64
	latencySum                                    float64 // seconds, over measured decisions
	failOpen, failClosed, failErrors              int64
}

// model runs one phase: arrivals in [0, end), statistics for arrivals (and busy time) in
// [warm, end). With only set just those primaries' arrivals are generated: Poisson splitting makes
// each primary's arrivals an independent Poisson process (a key lives on one primary, and so does
// its lease state), so a subset of primaries can be simulated on its own.
type model struct {
	cfg        Config
	r          *rand.Rand
	pop        *capacity.Popularity
	zipf       *workload.Zipf
	primaryOf  []uint16
	only       []bool // nil: every primary
	fprimary   int    // the failed primary (failover phase)
	svc        sampler
	sched      scheduler
	host       *hostState // nil unless cfg.Host (co-location)
	primaries  []primaryState
	leases     map[leaseKey]*leaseState
	warm, end  float64
	ramp       float64 // arrivals ramp up over [0, ramp)
	timeout    float64
	hist       *results.Histogram
	hotPrimary int
	hotHist    *results.Histogram
	c          counters

	// failover
	fo              *Failover
	downAt, upAt    float64
	lostOps         int64
	outageByKey     map[uint64]int64
	outageDecisions int64
	localOutage     int64
	during, after   *results.Histogram
}

func newModel(cfg Config, stream uint64, only []bool, end, warm float64, hotPrimary int) *model {
	e := &model{
		cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, stream)), only: only, svc: cfg.Service.sampler(),
		primaries: make([]primaryState, cfg.Primaries), leases: map[leaseKey]*leaseState{},
		warm: warm, end: end, timeout: cfg.Timeout.Seconds(), hist: results.NewHistogram(),
		hotPrimary: hotPrimary, hotHist: results.NewHistogram(),
	}
	e.pop, _ = capacity.NewPopularity(cfg.Tenants, cfg.Theta)
	if cfg.Theta > 0 {
		e.zipf, _ = workload.NewZipf(uint64(cfg.Tenants), cfg.Theta)
	}
	e.primaryOf = primaryTable(cfg.Tenants, cfg.Primaries)
	return e
}

// primaryTable maps the hottest ranks to their primary once (at most capacity.MaxExactTenants).
func primaryTable(tenants, primaries int) []uint16 {
	n := min(tenants, capacity.MaxExactTenants)
	t := make([]uint16, n)
	for k := range t {
		t[k] = uint16(capacity.PrimaryOfSlot(cluster.KeySlot(capacity.TenantName(k)), primaries))
	}
	return t
}

func (e *model) primaryFor(k uint64) int {
	if k < uint64(len(e.primaryOf)) {
		return int(e.primaryOf[k])
	}
	return capacity.PrimaryOfSlot(cluster.KeySlot(capacity.TenantName(int(k))), e.cfg.Primaries)
}

func (e *model) drawKey() uint64 {
	if e.zipf == nil {
		return uint64(e.r.IntN(e.cfg.Tenants))
	}
	return e.zipf.Draw(e.r)
}

// nextArrival schedules the first arrival after t (of the only primaries, when set).
func (e *model) nextArrival(t float64) {
	for {
		t += e.r.ExpFloat64() / e.cfg.Rate
		if t >= e.end {
			return
		}
		// During warm-up the rate ramps up linearly (thinning): a fleet starting at full rate
		// with empty leases would send every first request of every key to Redis at once, a
		// thundering herd that is not the steady state this model is for.
		if t < e.ramp && e.r.Float64()*e.ramp > t {
			continue
		}
		k := e.drawKey()
		if s := e.primaryFor(k); e.only == nil || e.only[s] {
			e.sched.push(event{t: t, kind: evArrival, key: k, primary: int32(s)})
			return
		}
	}
}

func (e *model) run() {
	e.startHost()
	e.nextArrival(0)
	if e.fo != nil {
		e.sched.push(event{t: e.downAt, kind: evDown, primary: int32(e.fprimary)})
		e.sched.push(event{t: e.upAt, kind: evUp, primary: int32(e.fprimary)})
	}
	for {
		ev, ok := e.sched.pop()
		if !ok {
			return
		}
		switch ev.kind {
		case evArrival:
			e.arrive(ev.t, ev.key, int(ev.primary))
			e.nextArrival(ev.t)
		case evDeparture:
			e.depart(ev.t, int(ev.primary), ev.epoch)
		case evDown:
			e.kill(ev.t, int(ev.primary))
		case evUp:
			e.primaries[ev.primary].down = false
		case evHostDone:
			e.hostDone(ev.t, ev.epoch)
		case evHostToggle:
			e.hostToggle(ev.t)
		}
	}
}

// arrive is a decision's intended start: on a co-located host it first waits for CPU.
func (e *model) arrive(t float64, k uint64, s int) {
	j := job{arrival: t, sent: t, key: k, primary: int32(s), measured: t >= e.warm}
	if j.measured {
		e.c.arrivals++
	}
	if e.cfg.MaxInflight > 0 && e.c.inflight >= int64(e.cfg.MaxInflight) {
		if j.measured {
			e.c.dropped++
		}
		return
	}
	e.c.inflight++
	if e.host != nil {
		e.hostArrive(t, j)
		return
	}
	e.route(t, j)
}

// route decides j at t from a lease, or sends it (or its lease fetch) to its primary.
func (e *model) route(t float64, j job) {
	j.sent = t
	k, s := j.key, int(j.primary)
	if e.cfg.Lease <= 1 {
		e.call(t, s, j)
		return
	}
	lk := leaseKey{gateway: int32(e.r.IntN(e.cfg.Gateways)), key: k}
	st := e.leases[lk]
	switch {
	case st != nil && st.tokens > 0 && t < st.expires:
		st.tokens--
		e.c.local++
		if e.fo != nil && t >= e.downAt && t < e.upAt {
			e.localOutage++
		}
		e.decide(j.arrival, t, s, j, false)
	case st != nil && st.pending && int64(len(st.waiters)) < e.cfg.Lease-1:
		st.waiters = append(st.waiters, j)
	default:
		if st == nil {
			st = &leaseState{}
			e.leases[lk] = st
		}
		st.pending, st.tokens = true, 0
		j.lease = st
		e.call(t, s, j)
	}
}

// call sends j to primary s: it fails at once if the primary is dead, else queues.
func (e *model) call(t float64, s int, j job) {
	sh := &e.primaries[s]
	if j.measured {
		e.c.central++
		sh.ops++
	}
	if sh.down {
		e.fail(t, s, j)
		return
	}
	sh.queue = append(sh.queue, j)
	if !sh.busy {
		e.start(t, s)
	}
}

func (e *model) start(t float64, s int) {
	sh := &e.primaries[s]
	sh.cur = sh.queue[sh.head]
	sh.queue[sh.head] = job{}
	sh.head++
	if sh.head > 1024 && sh.head*2 > len(sh.queue) {
		sh.queue = append(sh.queue[:0], sh.queue[sh.head:]...)
		sh.head = 0
	}
	d := e.svc(e.r)
	sh.busy = true
	// Utilisation counts the busy time that falls inside the measured window.
	if lo, hi := math.Max(t, e.warm), math.Min(t+d, e.end); hi > lo {
		sh.busyMeasured += hi - lo
	}
	e.sched.push(event{t: t + d, kind: evDeparture, primary: int32(s), epoch: sh.epoch})
}

func (e *model) depart(t float64, s int, epoch uint32) {
	sh := &e.primaries[s]
	if epoch != sh.epoch {
		return // the primary died while this call was in service: kill already failed it
	}
	j := sh.cur
	sh.busy = false
	if e.fo != nil && t <= e.downAt && t >= e.downAt-e.fo.ReplicationLag.Seconds() {
		e.lostOps++ // applied on the primary, not yet on the replica that will replace it
	}
	// The client's timeout runs from dispatch, so it bounds the server time (queue + service);
	// the client time (network, client library, generator lag) comes on top, as in a real run.
	ok := t-j.sent <= e.timeout
	done := t + e.cfg.Client.sample(e.r)
	e.decide(j.arrival, done, s, j, !ok)
	if st := j.lease; st != nil {
		st.pending = false
		if ok {
			st.tokens = max(0, e.cfg.Lease-1-int64(len(st.waiters)))
			st.expires = t + e.cfg.LeaseTTL.Seconds()
		}
		for _, w := range st.waiters {
			e.decide(w.arrival, math.Max(done, w.arrival), s, w, !ok || t-w.sent > e.timeout)
		}
		st.waiters = st.waiters[:0]
	}
	if sh.head < len(sh.queue) {
		e.start(t, s)
	}
}

// decide records one decision that arrived at `at` and was answered at done (or timed out).
func (e *model) decide(at, done float64, s int, j job, timedOut bool) {
	if timedOut {
		done = j.sent + e.timeout
	}
	e.c.inflight--
	if done >= e.warm && done < e.end {
		e.c.completedInWindow++
	}
	if e.during != nil {
		e.failoverLatency(at, done)
	}
	if !j.measured {
		return
	}
	e.c.decisions++
	if timedOut {
		e.c.timeouts++
	}
	e.c.latencySum += done - at
	lat := time.Duration((done - at) * 1e9)
	e.hist.Record(lat)
	if s == e.hotPrimary {
		e.hotHist.Record(lat)
	}
}

func (e *model) failoverLatency(at, done float64) {
	lat := time.Duration((done - at) * 1e9)
	switch {
	case at >= e.downAt && at < e.upAt:
		e.during.Record(lat)
	case at >= e.upAt && at < e.upAt+1:
		e.after.Record(lat)
	}
}

// kill makes primary s unavailable: the call in service and every queued call fail.
func (e *model) kill(t float64, s int) {
	sh := &e.primaries[s]
	sh.down = true
	sh.epoch++
	if sh.busy {
		sh.busy = false
		e.fail(t, s, sh.cur)
	}
	for _, j := range sh.queue[sh.head:] {
		e.fail(t, s, j)
	}
	sh.queue, sh.head = sh.queue[:0], 0
}

// fail decides j by the failover's fail policy after the client's timeout.
func (e *model) fail(t float64, s int, j job) {
	jobs := []job{j}
	if st := j.lease; st != nil {
		jobs = append(jobs, st.waiters...)
		st.waiters, st.pending = st.waiters[:0], false
	}
	policy := "error"
	if e.fo != nil {
		policy = e.fo.Fail
	}
	for _, x := range jobs {
		e.outageDecisions++
		switch policy {
		case "open":
			e.c.failOpen++
			if e.outageByKey != nil {
				e.outageByKey[x.key]++
			}
		case "closed":
			e.c.failClosed++
		default:
			e.c.failErrors++
		}
		e.decide(x.arrival, math.Max(t, x.sent)+e.timeout, s, x, false)
	}
}
