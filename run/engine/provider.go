package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/docker"
	"ratelab/scenarios"
)

// openCluster starts a local or docker cluster, attaches to the one `ratelab cluster up` left
// running, or connects to an external one, as spec.Cluster.Provider says.
func openCluster(ctx context.Context, spec *scenarios.Spec, opts Options, logf func(string, ...any)) (cluster.Cluster, error) {
	switch spec.Cluster.Provider {
	case "running":
		state := opts.StateFile
		if state == "" {
			state = cluster.DefaultStateFile()
		}
		cl, err := cluster.Attach(ctx, state)
		if err != nil {
			return nil, fmt.Errorf("cluster.provider running: %w (start one with `ratelab cluster up`)", err)
		}
		return cl, nil
	case "docker":
		logf("starting a Redis Cluster in Docker: %d primaries x %d replicas", spec.Cluster.Primaries, *spec.Cluster.Replicas)
		cl, err := docker.Start(ctx, docker.Options{Image: spec.Cluster.Image, Cluster: cluster.Options{
			Primaries:   spec.Cluster.Primaries,
			Replicas:    *spec.Cluster.Replicas,
			NodeTimeout: time.Duration(spec.Cluster.NodeTimeout),
			// As locally: a latency fault puts a proxy (in this process) before every node.
			Proxy: spec.HasFault(scenarios.FaultLatency),
			Logf:  logf,
		}})
		if err != nil {
			return nil, fmt.Errorf("cluster.provider docker: %w", err)
		}
		return cl, nil
	case "external":
		cfg, err := externalConfig(spec, opts)
		if err != nil {
			return nil, err
		}
		logf("connecting to the external Redis Cluster %s", cfg)
		cl, err := cluster.ConnectExternal(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster.provider external: %w", err)
		}
		return cl, nil
	}
	logf("starting a local Redis Cluster: %d primaries x %d replicas", spec.Cluster.Primaries, *spec.Cluster.Replicas)
	cl, err := cluster.StartLocal(ctx, cluster.Options{
		Primaries:   spec.Cluster.Primaries,
		Replicas:    *spec.Cluster.Replicas,
		NodeTimeout: time.Duration(spec.Cluster.NodeTimeout),
		// A latency fault needs every connection, replication included, through a proxy.
		Proxy: spec.HasFault(scenarios.FaultLatency),
		// A partition of a primary cuts the links between nodes through proxies of their own.
		Partitionable:      hasNodePartition(spec),
		MinReplicasToWrite: spec.Cluster.MinReplicasToWrite,
		MinReplicasMaxLag:  int(time.Duration(spec.Cluster.MinReplicasMaxLag) / time.Second),
		Logf:               logf,
	})
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// externalConfig builds the connection settings of an external cluster from the spec's URL and
// the run options (password file, TLS files, --allow-faults). The password itself is read by
// ConnectExternal from the file or $RATELAB_REDIS_PASSWORD, never from the spec or argv.
func externalConfig(spec *scenarios.Spec, opts Options) (cluster.ExternalConfig, error) {
	cfg, err := cluster.ParseExternal(spec.Cluster.URL)
	if err != nil {
		return cfg, fmt.Errorf("cluster.url: %w", err)
	}
	cfg.PasswordFile = opts.PasswordFile
	if opts.TLS != nil {
		t := *opts.TLS
		cfg.TLS = &t
	}
	cfg.AllowFaults = opts.AllowFaults
	return cfg, nil
}

// checkProviderFaults refuses, before anything starts, a spec whose faults the provider cannot
// or may not (external without --allow-faults) perform, instead of recording
// every fault as failed after the run.
func checkProviderFaults(spec *scenarios.Spec, opts Options) error {
	var kinds []string
	for _, f := range spec.Faults {
		if f.OnCluster() {
			kinds = append(kinds, string(f.Kind))
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	switch spec.Cluster.Provider {
	case "external":
		if !opts.AllowFaults {
			return fmt.Errorf("faults %s: refused on external cluster %s: it may serve other traffic; "+
				"drop the scenario's cluster faults, or pass --allow-faults for a cluster you may break",
				strings.Join(kinds, ", "), cluster.RedactURL(spec.Cluster.URL))
		}
		// Allowed: faults sent as commands (reshard, failover, script-flush). Signals and the
		// latency proxy need the nodes' processes and network, which ratelab has no access to.
		var cannot []string
		for _, k := range kinds {
			switch k {
			case string(scenarios.FaultKillPrimary), string(scenarios.FaultPause), string(scenarios.FaultRestart), string(scenarios.FaultLatency):
				cannot = append(cannot, k)
			}
		}
		if len(cannot) > 0 {
			return fmt.Errorf("faults %s on external cluster %s: %w: ratelab cannot reach the nodes' processes or network there; use provider local or docker for them",
				strings.Join(cannot, ", "), cluster.RedactURL(spec.Cluster.URL), cluster.ErrUnsupported)
		}
		return nil
	}
	return nil
}

// hasNodePartition reports whether the spec partitions a primary off its peers.
func hasNodePartition(spec *scenarios.Spec) bool {
	for _, f := range spec.Faults {
		if f.Kind == scenarios.FaultPartition && f.OnCluster() {
			return true
		}
	}
	return false
}
