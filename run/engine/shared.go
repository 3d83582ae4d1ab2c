package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// RunFunc runs one scenario: Run, or a driver of its own (the HTTP driver's, for via: http).
type RunFunc func(ctx context.Context, spec *scenarios.Spec, opts Options) (*Result, error)

// Shared is one cluster that a driver of many runs — algorithms side by side, run --repeat, a
// capacity sweep — starts once and runs on in turn, each run starting from empty buckets as on
// a fresh cluster. Share builds it, Run runs on it, Close stops it.
type Shared struct {
	cl cluster.Cluster // nil: every run opens its own cluster, as a single run does
	// state is the file a local cluster is handed to the runs through (as a running one); ""
	// when the runs attach to a running cluster as their spec says.
	state   string
	release func() error
}

// Share prepares runs of specs (one cluster section: the first spec's) on one cluster. A local
// cluster is started once, with the options a single run starts it with, and a running one
// (`ratelab cluster up`) attached; both are emptied before each run (FLUSHALL: the overspend
// envelope assumes every bucket starts full, and the same seed's keys outlive a run by their
// TTL; scripts stay cached). Nothing is shared — every run opens its own cluster — for docker
// and external clusters, runs that need none, and local runs with a fault on the cluster's
// nodes, which would leave the next run a changed cluster (a killed primary, a proxy).
func Share(ctx context.Context, opts Options, specs ...*scenarios.Spec) (*Shared, error) {
	sh := &Shared{release: func() error { return nil }}
	if len(specs) == 0 {
		return sh, nil
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	spec, needs, faulted := specs[0], false, false
	for _, s := range specs {
		needs = needs || s.NeedsCluster()
		for _, f := range s.Faults {
			faulted = faulted || f.OnCluster()
		}
	}
	p := spec.Cluster.Provider
	switch {
	case !needs || (p != scenarios.ProviderLocal && p != scenarios.ProviderRunning):
		return sh, nil
	case p == scenarios.ProviderLocal && faulted:
		logf("the scenario has faults on the cluster: each run starts its own cluster, as a single run does")
		return sh, nil
	}
	cl, err := openCluster(ctx, spec, opts, logf)
	if err != nil {
		return nil, err
	}
	sh.cl, sh.release = cl, cl.Close
	if local, ok := cl.(*cluster.Local); ok && p == scenarios.ProviderLocal {
		dir, err := os.MkdirTemp("", "ratelab-shared-")
		if err == nil {
			sh.state = filepath.Join(dir, "cluster.json")
			err = local.SaveState(sh.state)
		}
		sh.release = func() error { os.RemoveAll(dir); return cl.Close() }
		if err != nil {
			return nil, errors.Join(fmt.Errorf("recording the shared cluster: %w", err), sh.release())
		}
	}
	return sh, nil
}

// Run empties the shared cluster and runs spec on it with run (nil: Run). A run on a shared
// local cluster attaches to it as a running one and records provider local, where it ran.
func (sh *Shared) Run(ctx context.Context, spec *scenarios.Spec, opts Options, run RunFunc) (*Result, error) {
	if run == nil {
		run = Run
	}
	if sh.cl != nil {
		if err := flushCluster(ctx, sh.cl); err != nil {
			return nil, fmt.Errorf("emptying the shared cluster before the run: %w", err)
		}
	}
	if sh.state != "" {
		s := *spec
		s.Cluster.Provider = scenarios.ProviderRunning
		spec, opts.StateFile, opts.sharedLocal = &s, sh.state, true
	}
	return run(ctx, spec, opts)
}

// Close stops a cluster Share started (an attached one keeps running). Idempotent.
func (sh *Shared) Close() error {
	release := sh.release
	sh.release = func() error { return nil }
	return release()
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
