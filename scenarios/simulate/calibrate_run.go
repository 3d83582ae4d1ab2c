package simulate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
)

// Measure runs spec against the running cluster cl (spec's faults dropped, its cluster section
// replaced by cl), with server stats taken before and after, and returns the calibration, the
// run's summary and its directory (out, or a temp dir when out is empty).
func Measure(ctx context.Context, cl *cluster.Local, spec *scenarios.Spec, out string) (Calibration, *results.Summary, error) {
	if out == "" {
		d, err := os.MkdirTemp("", "ratelab-calibrate-")
		if err != nil {
			return Calibration{}, nil, err
		}
		out = d
	}
	state := filepath.Join(out, "cluster.json")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Calibration{}, nil, err
	}
	if err := cl.SaveState(state); err != nil {
		return Calibration{}, nil, err
	}
	defer os.Remove(state)
	var addrs []string
	for _, n := range cl.Primaries() {
		addrs = append(addrs, n.Addr)
	}
	run := *spec
	run.Faults = nil
	run.Cluster.Provider = "running"
	before, err := Snapshot(ctx, addrs)
	if err != nil {
		return Calibration{}, nil, err
	}
	res, err := scenarios.Run(ctx, &run, scenarios.RunOptions{Out: filepath.Join(out, "run"), StateFile: state})
	if err != nil {
		return Calibration{}, nil, err
	}
	after, err := Snapshot(ctx, addrs)
	if err != nil {
		return Calibration{}, nil, err
	}
	f, err := os.Open(filepath.Join(res.Dir, results.HistogramFile))
	if err != nil {
		return Calibration{}, nil, err
	}
	defer f.Close()
	h, err := results.ReadHistogram(f)
	if err != nil {
		return Calibration{}, nil, fmt.Errorf("%s: %w", results.HistogramFile, err)
	}
	cal, err := Calibrate(before, after, h)
	return cal, res.Summary, err
}

// CalibrateLocal starts a one-primary local cluster (no replicas), runs spec on it (Measure) and
// stops the cluster.
func CalibrateLocal(ctx context.Context, spec *scenarios.Spec, out string, logf func(string, ...any)) (Calibration, *results.Summary, error) {
	cl, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas,
		NodeTimeout: time.Duration(spec.Cluster.NodeTimeout), Logf: logf})
	if err != nil {
		return Calibration{}, nil, err
	}
	defer cl.Close()
	run := *spec
	run.Cluster.Primaries = 1
	none := 0
	run.Cluster.Replicas = &none
	return Measure(ctx, cl, &run, out)
}
