package faults

import (
	"context"
	"fmt"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// injectGateway executes a fault of the gateways and records its event. A clock skew holds its
// cause while it lasts, so the overspend it lets through is attributed to it; a gateway kill
// holds none: what it costs is false denies, not overspend.
func (r *Runner) injectGateway(ctx context.Context, f scenarios.FaultSpec, at float64) {
	ev := results.Fault{AtS: at, Kind: string(f.Kind), ForS: time.Duration(f.For).Seconds()}
	targets, fix := scenarios.GatewayTargets(f.Target, r.gw.Count())
	desc := f.Target
	if desc == "" {
		desc = "all"
	}
	desc = fmt.Sprintf("%s (%d of %d gateways)", desc, len(targets), r.gw.Count())
	switch {
	case fix != "":
		ev.Target, ev.Failed, ev.Error = f.Target, true, fix
	case f.Kind == scenarios.FaultClockSkew && r.gw.Has(GatewayClocks):
		off := time.Duration(f.Offset)
		ev.Target = fmt.Sprintf("%s, offset %s", desc, off)
		r.cfg.Logf("fault at %.1fs: %s %s", at, f.Kind, ev.Target)
		r.skew(ctx, targets, off, time.Duration(f.For))
	case f.Kind == scenarios.FaultGatewayKill && r.gw.Has(GatewayLeases):
		var lost int64
		for _, g := range targets {
			lost += r.gw.Drop(g)
		}
		ev.Target = fmt.Sprintf("%s, %d leased tokens lost", desc, lost)
		r.cfg.Logf("fault at %.1fs: %s %s", at, f.Kind, ev.Target)
	case f.Kind == scenarios.FaultPartition && r.gw.Has(GatewayLinks):
		ev.Target = desc
		r.cfg.Logf("fault at %.1fs: %s %s", at, f.Kind, ev.Target)
		r.cutGateways(ctx, targets, time.Duration(f.For))
	default:
		ev.Target, ev.Failed, ev.Error = desc, true, "the run's limiter has no such gateway state"
	}
	if ev.Failed {
		r.cfg.Logf("fault %s at %.1fs on %s failed: %s", f.Kind, at, ev.Target, ev.Error)
	}
	r.record(ev)
}

// skew offsets the targets' clocks by off for d (0: until the run ends), holding the clock-skew
// cause meanwhile.
func (r *Runner) skew(ctx context.Context, targets []int, off, d time.Duration) {
	release := r.hold("clock-skew")
	defer release()
	for _, g := range targets {
		r.gw.SetSkew(g, off)
	}
	if d == 0 {
		<-ctx.Done()
	} else {
		sleepCtx(ctx, d)
	}
	for _, g := range targets {
		r.gw.SetSkew(g, 0)
	}
}
