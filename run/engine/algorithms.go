package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// AlgorithmKinds are the algorithms Algorithms runs by default, in table order.
var AlgorithmKinds = []scenarios.LimiterKind{scenarios.KindTokenBucket, scenarios.KindGCRA, scenarios.KindFixedWindow, scenarios.KindSlidingWindow, scenarios.KindSlidingLog, scenarios.KindLease}

// AlgorithmRun is one algorithm's row of a side-by-side table: the same trace, its own envelope.
type AlgorithmRun struct {
	Kind scenarios.LimiterKind
	Dir  string // the run directory
	// Summary is the run's full summary.
	Summary *results.Summary
}

// OpsPerDecision is the Redis operations the run sent per decision.
func (r AlgorithmRun) OpsPerDecision() float64 {
	return float64(r.Summary.Central.Ops) / float64(max(r.Summary.Load.Completed, 1))
}

// Algorithms runs spec once per limiter kind on the same trace (same seed, same load, same
// policy) and returns one run per kind. The policy must be written as limit per window: the
// window kinds read it as such, the bucket kinds as burst limit refilled at limit per window
// (Spec.Validate), and each run is judged by its own algorithm's envelope. The runs share one
// cluster where they can (Share), emptied before each, so no run inherits another's keys. Runs
// go to opts.Out/<kind> (default out/<name>-<time>/<kind>).
func Algorithms(ctx context.Context, spec *scenarios.Spec, kinds []scenarios.LimiterKind, opts Options) ([]AlgorithmRun, error) {
	if spec.Policy.Limit < 1 || spec.Policy.Window <= 0 || spec.Policy.Rate != 0 || spec.Policy.Burst != 0 {
		return nil, fmt.Errorf("scenario %s: policy: running algorithms side by side needs one limit every algorithm reads: write it as {limit: L, window: W} without rate and burst", spec.Name)
	}
	if len(kinds) == 0 {
		kinds = AlgorithmKinds
	}
	if opts.Out == "" {
		opts.Out = DefaultDir(spec.Name, time.Now())
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	specs, err := algorithmSpecs(spec, kinds)
	if err != nil {
		return nil, err
	}
	sh, err := Share(ctx, opts, specs...)
	if err != nil {
		return nil, err
	}
	defer sh.Close()
	out := make([]AlgorithmRun, 0, len(kinds))
	for i, s := range specs {
		o := opts
		o.Out = filepath.Join(opts.Out, string(kinds[i]))
		opts.Logf("side by side: %s", kinds[i])
		res, err := sh.Run(ctx, s, o, nil)
		if err != nil {
			return out, fmt.Errorf("%s: %w", kinds[i], err)
		}
		out = append(out, AlgorithmRun{Kind: kinds[i], Dir: res.Dir, Summary: res.Summary})
		if ctx.Err() != nil {
			break
		}
	}
	return out, nil
}

// algorithmSpecs are spec as each of kinds, defaulted and validated.
func algorithmSpecs(spec *scenarios.Spec, kinds []scenarios.LimiterKind) ([]*scenarios.Spec, error) {
	specs := make([]*scenarios.Spec, len(kinds))
	for i, k := range kinds {
		s := *spec
		s.Endpoints = append([]scenarios.Endpoint(nil), spec.Endpoints...)
		s.Limiter.Kind = k
		if spec.Limiter.Lease != nil {
			l := *spec.Limiter.Lease
			s.Limiter.Lease = &l
		}
		s.ApplyDefaults()
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("scenario %s as limiter.kind %s: %w", spec.Name, k, err)
		}
		specs[i] = &s
	}
	return specs, nil
}

// FormatAlgorithms renders the runs as a Markdown table: overspend, false denies, Redis
// operations per decision, p99 and achieved rate per algorithm.
func FormatAlgorithms(rows []AlgorithmRun) string {
	var b strings.Builder
	b.WriteString("| algorithm | allowed | overspend (ratio) | false denies (ratio) | Redis ops/decision | p99 ms | achieved/s |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		s := r.Summary
		fmt.Fprintf(&b, "| %s | %d | %d (%.2g) | %d (%.2g) | %.3f | %s | %.0f |\n", r.Kind, s.Outcomes.Allowed,
			s.Overspend.Requests, s.Overspend.Ratio, s.Overspend.FalseDenies, s.Overspend.FalseDenyRatio,
			r.OpsPerDecision(), s.LatencyMs.P99, s.Load.AchievedRPS)
	}
	return b.String()
}
