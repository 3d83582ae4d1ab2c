package attack_test

import (
	"context"
	"hash/fnv"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/attack"
	"ratelab/run/engine"
	"ratelab/scenarios"
	"ratelab/workload"
	"ratelab/workload/trace"
)

// answerClass is what the test's limiter answers for one key: every class of Record the drivers
// classify (engine.Classify), each bound to whole keys so that its figures do not depend on the
// order in which two drivers' requests of different keys arrive.
type answerClass uint8

const (
	classDenyAll     answerClass = iota // a plain refusal: false denies while the envelope has tokens
	classAllowAll                       // a plain admission: overspend past the burst
	classTimeout                        // an error the store may have debited: an unknown outcome
	classConnRefused                    // an error that sent nothing: no decision, not unknown
	classFailOpen                       // a fail policy's admission of a timeout: failed open, unknown
	classFailClosed                     // a fail policy's refusal of a CLUSTERDOWN: failed closed
	classWaitShort                      // the bucket's answer with a short WAIT: the answer stands
	classBucket                         // the bucket's answer
	classAlternate                      // by turns a timeout and an admission: the possible range opens
	numClasses
)

// classOf is the class of a key: a hash of its tenant and endpoint, the same in every driver.
func classOf(tenant, endpoint string) answerClass {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(endpoint))
	return answerClass(h.Sum32() % uint32(numClasses))
}

// keyAnswers is what the limiter answered one key: its admissions, refusals and errors.
type keyAnswers struct{ allowed, denied, errs int64 }

// calls is how many requests of the key the limiter has answered.
func (k *keyAnswers) calls() int64 { return k.allowed + k.denied + k.errs }

// classLimiter answers each key by its class (the bucket classes from the in-memory bucket it
// wraps) and counts its answers per key: the limiter's own view of the run, which both drivers
// must book as it is.
type classLimiter struct {
	inner limiter.Limiter
	mu    sync.Mutex
	keys  map[string]*keyAnswers
}

func (c *classLimiter) Allow(ctx context.Context, r limiter.Request) (d limiter.Decision, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.keys[limiter.KeyFor(r.Tenant, r.Endpoint)]
	if k == nil {
		k = &keyAnswers{}
		c.keys[limiter.KeyFor(r.Tenant, r.Endpoint)] = k
	}
	switch classOf(r.Tenant, r.Endpoint) {
	case classDenyAll:
		d = limiter.Decision{Source: limiter.Local, RetryAfter: time.Second}
	case classAllowAll:
		d = limiter.Decision{Allowed: true, Source: limiter.Local}
	case classTimeout:
		err = &limiter.RemoteError{Kind: limiter.KindTimeout, MayHaveDebited: true, Msg: "test: timeout"}
	case classConnRefused:
		err = &limiter.RemoteError{Kind: limiter.KindConn, Msg: "test: connection refused"}
	case classFailOpen:
		d = limiter.Decision{Allowed: true, Source: limiter.FailOpen,
			Failure: limiter.Failure{Failed: true, Kind: limiter.KindTimeout, MayHaveDebited: true}}
	case classFailClosed:
		d = limiter.Decision{Source: limiter.FailClosed, RetryAfter: time.Second,
			Failure: limiter.Failure{Failed: true, Kind: limiter.KindClusterDown}}
	case classWaitShort:
		d, err = c.inner.Allow(ctx, r)
		d.Unreplicated = true
	case classAlternate:
		if k.calls()%2 == 0 {
			err = &limiter.RemoteError{Kind: limiter.KindTimeout, MayHaveDebited: true, Msg: "test: timeout"}
		} else {
			d = limiter.Decision{Allowed: true, Source: limiter.Local}
		}
	default:
		d, err = c.inner.Allow(ctx, r)
	}
	switch {
	case err != nil:
		k.errs++
	case d.Allowed:
		k.allowed++
	default:
		k.denied++
	}
	return d, err
}

// equivalenceTrace writes a seeded trace to replay: 40 tenants, two endpoints, 600 requests over
// 2 s.
func equivalenceTrace(t *testing.T) string {
	t.Helper()
	keys, err := workload.NewZipf(40, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := workload.NewMix([]string{"read", "write"}, []float64{2, 1})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Generate(trace.GenOptions{Rate: 300, Duration: 2 * time.Second, Pacer: "poisson", Seed: 40, Keys: keys, Mix: mix,
		Start: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "equivalence.trace")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := trace.Write(f, tr); err != nil {
		t.Fatal(err)
	}
	return path
}

// driverFigures are the figures of one run that both drivers can see.
type driverFigures struct {
	offered, decisions int64
	outcomes           results.Outcomes
	errors             results.Errors
	overspend          results.Overspend
	hotKeys            []results.HotKey
	keys               map[string]keyAnswers
}

// One trace replayed through the in-process driver and through the HTTP driver (via: http,
// ratelab's gateway on loopback) against the same limiter gets the same figures for everything
// both can see: offered, decisions, outcomes (failed open and closed, wait_short included),
// errors by kind, every overspend figure (confirmed and possible, by cause, unknown outcomes,
// burst excess) and the hot keys; and the limiter answered every key the same in both.
//
// The figures are made deterministic, not merely close: the policy refills 0.001 token/s, so
// what the envelope allows a key in 2 s is its burst whenever the request is judged (the HTTP
// driver judges at the send and the arrival, the in-process one at the decision); each key's
// class fixes its answers, and each key's requests reach the limiter in trace order in both
// drivers (lanes in process, the sequencer over HTTP), which the bucket and alternating classes
// rely on. What legitimately differs is left
// out: latency, the late decisions and achieved rate (timing), load.sent's meaning over HTTP
// (answered, not started: equal here as nothing is dropped), concurrency, notes, environment.
func TestDriversAgreeOnOneTrace(t *testing.T) {
	t.Parallel()
	path := equivalenceTrace(t)
	spec := parseSpec(t, `
name: equivalence
seed: 40
trace: {file: `+path+`}
load: {concurrency: 4, max_inflight: 256}
endpoints: [{name: read, weight: 2}, {name: write, weight: 1}]
policy: {rate: 0.001, burst: 3}
limiter: {kind: memory, timeout: 2s}
`)
	var figs [2]driverFigures
	for i, via := range []string{scenarios.ViaProcess, scenarios.ViaHTTP} {
		s := *spec
		s.Via = via
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		var lims []*classLimiter
		opts := engine.Options{Out: t.TempDir(), Wrap: func(l limiter.Limiter) limiter.Limiter {
			c := &classLimiter{inner: l, keys: map[string]*keyAnswers{}}
			lims = append(lims, c)
			return c
		}}
		var res *engine.Result
		var err error
		if via == scenarios.ViaHTTP {
			res, err = attack.RunScenario(context.Background(), &s, opts)
		} else {
			res, err = engine.Run(context.Background(), &s, opts)
		}
		if err != nil {
			t.Fatalf("%s: %v", via, err)
		}
		sum, err := results.ReadSummary(filepath.Join(res.Dir, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Load.Dropped != 0 {
			t.Fatalf("%s: %d requests dropped: the machine was too busy for an exact comparison", via, sum.Load.Dropped)
		}
		f := driverFigures{offered: sum.Load.Offered, decisions: sum.Load.Completed, outcomes: sum.Outcomes,
			errors: sum.Errors, overspend: sum.Overspend, hotKeys: sum.HotKeys, keys: map[string]keyAnswers{}}
		var lim keyAnswers
		for _, c := range lims {
			for k, a := range c.keys {
				g := f.keys[k]
				g.allowed, g.denied, g.errs = g.allowed+a.allowed, g.denied+a.denied, g.errs+a.errs
				f.keys[k] = g
				lim.allowed, lim.denied, lim.errs = lim.allowed+a.allowed, lim.denied+a.denied, lim.errs+a.errs
			}
		}
		// The driver's books hold what the limiter answered, nothing else.
		o := sum.Outcomes
		if o.Allowed+o.FailedOpen != lim.allowed || o.Denied+o.FailedClosed != lim.denied || o.Errors != lim.errs {
			t.Errorf("%s: outcomes %+v, the limiter answered %+v (allowed, denied, errors)", via, o, lim)
		}
		figs[i] = f
	}
	p, h := figs[0], figs[1]
	if p.offered != h.offered || p.decisions != h.decisions {
		t.Errorf("offered/decisions: in process %d/%d, over HTTP %d/%d", p.offered, p.decisions, h.offered, h.decisions)
	}
	if p.outcomes != h.outcomes {
		t.Errorf("outcomes:\n in process %+v\n over HTTP  %+v", p.outcomes, h.outcomes)
	}
	if p.errors != h.errors {
		t.Errorf("errors by kind:\n in process %+v\n over HTTP  %+v", p.errors, h.errors)
	}
	if !maps.Equal(p.keys, h.keys) {
		t.Errorf("the limiter answered the keys differently:\n in process %v\n over HTTP  %v", p.keys, h.keys)
	}
	if !reflect.DeepEqual(p.hotKeys, h.hotKeys) {
		t.Errorf("hot keys:\n in process %+v\n over HTTP  %+v", p.hotKeys, h.hotKeys)
	}
	po, ho := p.overspend, h.overspend
	// Burst excess is in tokens refilled at the judged times, which differ (see above): by at
	// most the refill of the run's length (plus its set-up slack) per key. The rest must be equal;
	// the bound's sources and verdict are the session's (no leases, no faults: none in both).
	slack := spec.Policy.Rate * 10 // tokens a key refills in 10 s
	pe, he := po.BurstExcess, ho.BurstExcess
	if pe.WorstKey != he.WorstKey || math.Abs(pe.WorstTokens-he.WorstTokens) > slack || math.Abs(pe.Tokens-he.Tokens) > slack*float64(len(p.keys)) {
		t.Errorf("burst excess: in process %+v, over HTTP %+v", pe, he)
	}
	po.BurstExcess, ho.BurstExcess = results.BurstExcess{}, results.BurstExcess{}
	if !reflect.DeepEqual(po, ho) {
		t.Errorf("overspend:\n in process %+v\n over HTTP  %+v", po, ho)
	}
	// Every class must have shown, or the comparison proves less than it says.
	o := p.outcomes
	if o.Allowed == 0 || o.Denied == 0 || o.FailedOpen == 0 || o.FailedClosed == 0 || o.Errors == 0 || o.WaitShort == 0 ||
		po.Requests == 0 || po.FalseDenies == 0 || po.UnknownOutcomes == 0 || po.PossibleRequests <= po.Requests || p.errors.Timeout == 0 || p.errors.Conn == 0 || p.errors.ClusterDown == 0 {
		t.Errorf("outcomes %+v, errors %+v, overspend %+v: want every class of answer in the trace", o, p.errors, po)
	}
	t.Logf("both drivers: outcomes %+v, errors %+v, overspend %d (possible %d), false denies %d (possible %d), unknown %d",
		o, p.errors, po.Requests, po.PossibleRequests, po.FalseDenies, po.PossibleFalseDenies, po.UnknownOutcomes)
}
