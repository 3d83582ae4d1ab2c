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
	"ratelab/scenarios"
	"ratelab/scenarios/engine"
)

// CostHeader is the header RunScenario's replays carry each request's cost in; the in-process
// gateway reads it.
const CostHeader = "X-Ratelab-Cost"

// RunScenario runs a via: http scenario: the scenario's limiter (engine.OpenTarget: its
// cluster, script, fail policy and faults) behind ratelab's gateway on a free loopback port in
// this process, driven by vegeta with the scenario's tenants, endpoints, pacer, rate, duration
// and seed (or its trace, each tenant's order kept). The run directory is the engine's —
// scenario.yaml, timeseries.csv, latency.hdr.json, summary.json, plus vegeta's results.bin —
// with environment.via "http" and overspend judged black-box from 200 vs 429.
//
// It lives here rather than in engine.Run because this package imports scenarios: the CLI
// calls RunScenario when spec.Via is http, engine.Run otherwise.
//
// The HTTP path is slower than in-process decisions (a bare net/http handler serves ~36K req/s
// on the 2-core reference machine): when vegeta cannot keep the offered rate, the summary says
// so (load.generator_limited and the note), as for any attack.
func RunScenario(ctx context.Context, spec *scenarios.Spec, opts engine.RunOptions) (res *engine.Result, err error) {
	if opts.RecordTrace != "" {
		return nil, errors.New("record trace: via: http runs record no trace yet; record the schedule with ratelab trace gen --scenario NAME (the same requests)")
	}
	tg, err := engine.OpenTarget(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := tg.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("stopping the cluster: %w", cerr)
		}
	}()
	spec = tg.Spec
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}

	gwOpts := []gateway.Option{gateway.WithPolicy(tg.Policy)}
	if tg.Trace != nil {
		gwOpts = append(gwOpts, gateway.WithCostFunc(func(r *http.Request) int64 {
			n, err := strconv.ParseInt(r.Header.Get(CostHeader), 10, 64)
			if err != nil {
				return gateway.DefaultCost
			}
			return n
		}))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("via http: listen on loopback: %w", err)
	}
	srv, err := gateway.NewServer(ln.Addr().String(), tg.Limiter, nil, gwOpts...)
	if err != nil {
		ln.Close()
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), gateway.DefaultShutdownWait)
		defer cancel()
		if serr := srv.Shutdown(sctx); serr != nil {
			// Everything is measured by now: cut what is left rather than fail the run.
			logf("via http: gateway shutdown: %v; closing its connections", serr)
			_ = srv.HTTPServer().Close()
		}
		if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = fmt.Errorf("via http: gateway: %w", serr)
		}
	}()
	url := "http://" + ln.Addr().String() + "/"
	logf("via http: ratelab gateway on %s (%s limiter), driven by vegeta", url, spec.Limiter.Kind)

	o := Options{
		URL: url, Policy: tg.Policy, Seed: spec.Seed, Out: tg.Dir, Version: opts.Version, Logf: opts.Logf,
		OnProgress: opts.OnProgress,
		Workers:    uint64(min(spec.Load.Concurrency, spec.Load.MaxInflight)),
		MaxWorkers: uint64(spec.Load.MaxInflight),
	}
	if tg.Trace != nil {
		o.Trace, o.Speed, o.CostHeader = tg.Trace, spec.Trace.Speed, CostHeader
	} else {
		// The engine's schedule for the spec (pacer, distribution, mix, seed); a generated
		// schedule has no tenant order to keep.
		if o.Trace, err = TraceFromSpec(spec); err != nil {
			return nil, err
		}
		o.NoTenantOrder = true
	}
	var rows []results.Interval
	o.OnInterval = func(iv results.Interval) {
		rows = append(rows, iv)
		if opts.OnInterval != nil {
			opts.OnInterval(iv)
		}
	}
	o.hooks = &runHooks{
		name:    spec.Name,
		onStart: tg.StartFaults,
		finish: func(sum *results.Summary) {
			tg.Finish(ctx, sum, rows)
			sum.Load.Note += fmt.Sprintf("; via http: ratelab's gateway on %s in this process (a bare net/http handler serves about 36K req/s on a 2-core machine: above that the HTTP path, not the limiter, is measured)",
				ln.Addr())
		},
	}
	began := time.Now()
	ar, err := Run(ctx, o)
	if ar == nil {
		return nil, err
	}
	logf("via http: %d decisions in %v", ar.Summary.Load.Decisions, time.Since(began).Round(time.Millisecond))
	return &engine.Result{Dir: ar.Dir, Summary: ar.Summary}, err
}
