package attack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"ratelab/limiter/gateway"
	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// CostHeader is the header RunScenario's replays carry each request's cost in; the in-process
// gateway reads it.
const CostHeader = "X-Ratelab-Cost"

// RunScenario runs a via: http scenario: the engine opens the scenario's session (its cluster,
// limiter of any kind behind every gateway, tariffs, fail policies, faults — the same set-up as
// an in-process run), each gateway's limiter is served by ratelab's gateway on a loopback port
// of this process, and vegeta drives them with the scenario's tenants, endpoints, pacer, rate,
// duration and seed (or its trace, each tenant's order kept), request i going to gateway
// i mod gateways. The run directory is the engine's — scenario.yaml, timeseries.csv,
// latency.hlog, latency.hdr.json, latency.hgrm, summary.json, plus vegeta's results.bin — with environment.via "http" and
// overspend judged black-box from 200 vs 429 against the scenario's envelope.
//
// The HTTP path is slower than in-process decisions (a bare net/http handler is the ceiling):
// when vegeta cannot keep the offered rate, the summary says so (load.generator_limited and the
// note), as for any attack.
func RunScenario(ctx context.Context, spec *scenarios.Spec, opts engine.Options) (res *engine.Result, err error) {
	if opts.RecordTrace != "" {
		return nil, errors.New("record trace: via: http runs record no trace yet; record the schedule with ratelab trace gen --scenario NAME (the same requests)")
	}
	s, err := engine.Open(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("stopping the cluster: %w", cerr)
		}
	}()
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	gws, err := serveGateways(s, logf)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := gws.shutdown(logf); serr != nil && err == nil {
			err = serr
		}
	}()
	o, err := scenarioOptions(s, opts, gws.urls)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	m, err := measure(ctx, o)
	if m == nil {
		return nil, err
	}
	logf("via http: %d decisions in %v", m.sum.Load.Completed, time.Since(began).Round(time.Millisecond))
	m.sum.Load.AddNote(results.NoteVia, fmt.Sprintf("via http: %d ratelab gateway(s) on %v in this process (above what a bare net/http handler serves on this machine, the HTTP path, not the limiter, is measured)",
		len(gws.urls), gws.urls))
	res, ferr := s.Finish(ctx, &engine.Measured{Summary: m.sum, Rows: m.rows, Hist: m.hist, Ran: m.ran})
	return res, errors.Join(err, ferr)
}

// scenarioOptions are the attack's options for the session's scenario: its schedule (or
// trace), seed, workers and run directory, and the hooks that tie the attack to the session.
func scenarioOptions(s *engine.Session, opts engine.Options, urls []string) (Options, error) {
	spec := s.Spec
	o := Options{
		Seed: spec.Seed, Out: s.Dir, Version: opts.Version, Logf: opts.Logf, OnProgress: opts.OnProgress,
		OnInterval: opts.OnInterval, OnHistogram: opts.OnHistogram,
		Workers:    uint64(min(spec.Load.Concurrency, spec.Load.MaxInflight)),
		MaxWorkers: uint64(spec.Load.MaxInflight),
		hooks: &runHooks{
			name: spec.Name, urls: urls, start: s.Start, fillRow: s.FillRow,
			newChecker: s.CheckerFor, consumers: opts.Consumers,
		},
	}
	var err error
	if tr := s.Trace(); tr != nil {
		o.Trace, o.Speed, o.CostHeader = tr, spec.Trace.Speed, CostHeader
	} else if o.Trace, err = engine.TraceOf(spec); err != nil {
		// The engine's schedule for the spec (pacer, distribution, mix, seed); a generated
		// schedule has no tenant order to keep.
		return o, err
	} else {
		o.NoTenantOrder = true
	}
	return o, nil
}

// gateways are the HTTP servers of a scenario's gateways, one per gateway limiter. A limiter's
// error reaches the driver as a 503 whose failure headers name its kind (limiter/gateway), so
// the driver classifies it as it arrives (answerOf), once.
type gateways struct {
	srvs   []*gateway.Server
	served []chan error
	urls   []string
}

// serveGateways starts one gateway server per session gateway on a free loopback port.
func serveGateways(s *engine.Session, logf func(string, ...any)) (*gateways, error) {
	g := &gateways{}
	opts := []gateway.Option{gateway.WithPolicyFunc(s.PolicyFunc())}
	if s.Trace() != nil {
		opts = append(opts, gateway.WithCostFunc(func(r *http.Request) int64 {
			n, err := strconv.ParseInt(r.Header.Get(CostHeader), 10, 64)
			if err != nil {
				return gateway.DefaultCost
			}
			return n
		}))
	}
	for _, lim := range s.Gateways() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return g, errors.Join(fmt.Errorf("via http: listen on loopback: %w", err), g.shutdown(logf))
		}
		srv, err := gateway.NewServer(ln.Addr().String(), lim, nil, opts...)
		if err != nil {
			ln.Close()
			return g, errors.Join(err, g.shutdown(logf))
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		g.srvs, g.served = append(g.srvs, srv), append(g.served, served)
		g.urls = append(g.urls, "http://"+ln.Addr().String()+"/")
	}
	logf("via http: %d ratelab gateway(s) on %v (%s limiter), driven by vegeta", len(g.urls), g.urls, s.Spec.Limiter.Kind)
	return g, nil
}

// shutdown stops every server; everything is measured by then, so a server that does not drain
// in time has its connections cut rather than fail the run.
func (g *gateways) shutdown(logf func(string, ...any)) error {
	var errs []error
	for i, srv := range g.srvs {
		sctx, cancel := context.WithTimeout(context.Background(), gateway.DefaultShutdownWait)
		if serr := srv.Shutdown(sctx); serr != nil {
			logf("via http: gateway shutdown: %v; closing its connections", serr)
			_ = srv.HTTPServer().Close()
		}
		cancel()
		if serr := <-g.served[i]; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("via http: gateway: %w", serr))
		}
	}
	g.srvs, g.served = nil, nil
	return errors.Join(errs...)
}
