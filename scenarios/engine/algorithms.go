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
	return float64(r.Summary.Central.Ops) / float64(max(r.Summary.Load.Decisions, 1))
}

// Algorithms runs spec once per limiter kind on the same trace (same seed, same load, same
// policy) and returns one run per kind. The policy must be written as limit per window: the
// window kinds read it as such, the bucket kinds as burst limit refilled at limit per window
// (Spec.Validate), and each run is judged by its own algorithm's envelope. With provider local,
// one cluster is started for all runs and flushed between them, so no run inherits another's
// keys. Runs go to opts.Out/<kind> (default out/<name>-<time>/<kind>).
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
	flush, release, err := shareCluster(ctx, spec, specs, &opts)
	if err != nil {
		return nil, err
	}
	defer release()
	out := make([]AlgorithmRun, 0, len(kinds))
	base := opts.Out
	for i, s := range specs {
		if flush != nil {
			if err := flush(); err != nil {
				return out, fmt.Errorf("flushing the cluster before %s: %w", s.Limiter.Kind, err)
			}
		}
		o := opts
		o.Out = filepath.Join(base, string(kinds[i]))
		opts.Logf("side by side: %s", kinds[i])
		res, err := Run(ctx, s, o)
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

// shareCluster starts one cluster for every run (or attaches to the running one) and returns a
// func that flushes it before each run and one that releases it. Docker runs start a fresh
// cluster each and external runs keep their keys apart by prefix and are never flushed: only
// local and running clusters are shared (flush is nil otherwise). A local cluster is handed to
// the runs as a running one, through a state file in opts.Out.
func shareCluster(ctx context.Context, spec *scenarios.Spec, specs []*scenarios.Spec, opts *Options) (flush func() error, release func(), err error) {
	release = func() {}
	needs := false
	for _, s := range specs {
		needs = needs || s.NeedsCluster()
	}
	p := spec.Cluster.Provider
	if !needs || (p != scenarios.ProviderLocal && p != scenarios.ProviderRunning) {
		return nil, release, nil
	}
	cl, err := openCluster(ctx, spec, *opts, opts.Logf)
	if err != nil {
		return nil, release, err
	}
	release = func() { cl.Close() }
	if local, ok := cl.(*cluster.Local); ok && p == scenarios.ProviderLocal {
		state := filepath.Join(opts.Out, "cluster-state.json")
		if err := os.MkdirAll(opts.Out, 0o755); err != nil {
			return nil, release, err
		}
		if err := local.SaveState(state); err != nil {
			return nil, release, err
		}
		release = func() { os.Remove(state); cl.Close() }
		opts.StateFile = state
		for _, s := range specs {
			s.Cluster.Provider = scenarios.ProviderRunning
		}
	}
	return func() error { return flushCluster(ctx, cl) }, release, nil
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
