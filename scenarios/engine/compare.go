package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
)

// CompareKinds are the algorithms CompareAlgorithms runs by default, in table order.
var CompareKinds = []scenarios.LimiterKind{scenarios.KindTokenBucket, scenarios.KindGCRA, scenarios.KindFixedWindow, scenarios.KindSlidingWindow, scenarios.KindSlidingLog, scenarios.KindLease}

// AlgorithmResult is one algorithm's row of a comparison: the same trace, its own envelope.
type AlgorithmResult struct {
	Kind scenarios.LimiterKind
	Dir  string // the run directory
	// Summary is the run's full summary.
	Summary *results.Summary
}

// OpsPerDecision is the Redis operations the run sent per decision.
func (r AlgorithmResult) OpsPerDecision() float64 {
	return float64(r.Summary.Central.Ops) / float64(max(r.Summary.Load.Decisions, 1))
}

// CompareAlgorithms runs spec once per limiter kind on the same trace (same seed, same load,
// same policy) and returns one result per kind. The policy must be written as limit per window:
// the window kinds read it as such, the bucket kinds as burst limit refilled at limit per window
// (Spec.Validate), and each run is judged by its own algorithm's envelope. With provider local,
// one cluster is started for all runs and flushed between them, so no run inherits another's
// keys. Runs go to opts.Out/<kind> (default out/<name>-<time>/<kind>).
func CompareAlgorithms(ctx context.Context, spec *scenarios.Spec, kinds []scenarios.LimiterKind, opts Options) ([]AlgorithmResult, error) {
	if spec.Policy.Limit < 1 || spec.Policy.Window <= 0 || spec.Policy.Rate != 0 || spec.Policy.Burst != 0 {
		return nil, fmt.Errorf("scenario %s: policy: comparing algorithms needs one limit every algorithm reads: write it as {limit: L, window: W} without rate and burst", spec.Name)
	}
	if len(kinds) == 0 {
		kinds = CompareKinds
	}
	if opts.Out == "" {
		opts.Out = filepath.Join("out", spec.Name+"-"+time.Now().Format("20060102-150405"))
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
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

	needs := false
	for _, s := range specs {
		needs = needs || s.NeedsCluster()
	}
	var flush func() error
	// Docker runs start a fresh cluster each; external runs keep their keys apart by prefix and
	// must never be flushed: only local and running clusters are shared and flushed here.
	if needs && (spec.Cluster.Provider == "local" || spec.Cluster.Provider == "running") {
		// One cluster for every run (started here, or the running one), flushed before each.
		cl, err := openCluster(ctx, spec, opts, logf)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		if local, ok := cl.(*cluster.Local); ok && spec.Cluster.Provider == "local" {
			state := filepath.Join(opts.Out, "cluster-state.json")
			if err := os.MkdirAll(opts.Out, 0o755); err != nil {
				return nil, err
			}
			if err := local.SaveState(state); err != nil {
				return nil, err
			}
			defer os.Remove(state)
			opts.StateFile = state
			for _, s := range specs {
				s.Cluster.Provider = "running"
			}
		}
		flush = func() error { return flushCluster(ctx, cl) }
	}
	out := make([]AlgorithmResult, 0, len(kinds))
	base := opts.Out
	for i, s := range specs {
		if flush != nil {
			if err := flush(); err != nil {
				return out, fmt.Errorf("flushing the cluster before %s: %w", s.Limiter.Kind, err)
			}
		}
		o := opts
		o.Out = filepath.Join(base, string(kinds[i]))
		logf("comparing: %s", kinds[i])
		res, err := Run(ctx, s, o)
		if err != nil {
			return out, fmt.Errorf("%s: %w", kinds[i], err)
		}
		out = append(out, AlgorithmResult{Kind: kinds[i], Dir: res.Dir, Summary: res.Summary})
		if ctx.Err() != nil {
			break
		}
	}
	return out, nil
}

// flushCluster empties every primary of cl.
func flushCluster(ctx context.Context, cl cluster.Cluster) error {
	o := *cl.ClientOptions() // credentials and TLS, where the provider has them
	o.MaxRetries = -1
	c := redis.NewClusterClient(&o)
	defer c.Close()
	return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.FlushAll(ctx).Err()
	})
}

// FormatAlgorithms renders a comparison as a Markdown table: overspend, false denies, Redis
// operations per decision, p99 and achieved rate per algorithm.
func FormatAlgorithms(rows []AlgorithmResult) string {
	var b strings.Builder
	b.WriteString("| algorithm | allowed | overspend (ratio) | false denies (ratio) | Redis ops/decision | p99 ms | achieved/s |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		s := r.Summary
		fmt.Fprintf(&b, "| %s | %d | %d (%.2g) | %d (%.2g) | %.3f | %.3f | %.0f |\n", r.Kind, s.Outcomes.Allowed,
			s.Overspend.Requests, s.Overspend.Ratio, s.Overspend.FalseDenies, s.Overspend.FalseDenyRatio,
			r.OpsPerDecision(), s.LatencyMs.P99, s.Load.AchievedRPS)
	}
	return b.String()
}
