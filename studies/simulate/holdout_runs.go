package simulate

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// nodeRun is one run with each primary's server stats before and after it.
type nodeRun struct {
	measured
	before, after []cluster.NodeStats // one per primary, in cl.Primaries() order
}

// calls is each primary's script calls over the run.
func (r nodeRun) calls() []int64 {
	out := make([]int64, len(r.after))
	for i := range r.after {
		out[i] = r.after[i].Calls - r.before[i].Calls
	}
	return out
}

// readEach reads each address's NodeStats on its own.
func readEach(ctx context.Context, addrs []string) ([]cluster.NodeStats, error) {
	out := make([]cluster.NodeStats, len(addrs))
	for i, a := range addrs {
		s, err := cluster.ReadNodeStats(ctx, []string{a})
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// clusterRuns runs a scenario on one cluster, each run into a directory of its own under out.
type clusterRuns struct {
	cl         *cluster.Local
	addrs      []string
	state, out string
	logf       func(string, ...any)
	n          int
}

// run runs spec at rate for the spec's duration as a run of kind, reading every primary's
// stats around it.
func (cr *clusterRuns) run(ctx context.Context, kind string, spec scenarios.Spec, rate float64) (nodeRun, error) {
	spec.Load.Rate = rate
	cr.n++
	var r nodeRun
	var err error
	if r.before, err = readEach(ctx, cr.addrs); err != nil {
		return r, err
	}
	if r.measured, err = runOn(ctx, cr.cl, &spec, cr.state, filepath.Join(cr.out, fmt.Sprintf("%02d-%s", cr.n, kind))); err != nil {
		return r, err
	}
	if r.after, err = readEach(ctx, cr.addrs); err != nil {
		return r, err
	}
	cr.logf("%s at %.0f/s: achieved %.0f/s, p99 %.3f ms, calls by primary %v", kind, rate, r.sum.Load.AchievedRPS, r.sum.LatencyServedMs.P99, r.calls())
	return r, nil
}

// measureCluster starts a local cluster of o.Primaries primaries and runs on it, into m: the p99
// levels (o.Repeats rounds of holdoutLevels of m.SaturationRPS, lowest first) and then one
// node-share run per holdoutThetas at the lowest level's rate. The primaries' main-thread CPU
// over the top level's runs names the busiest primary.
func measureCluster(ctx context.Context, spec *scenarios.Spec, o HoldoutOptions, out string, m *HeldOut) error {
	cl, err := cluster.StartLocal(ctx, cluster.Options{Primaries: o.Primaries, Replicas: cluster.NoReplicas, Logf: o.Logf})
	if err != nil {
		return err
	}
	defer cl.Close()
	_, state, err := saveState(cl, out)
	if err != nil {
		return err
	}
	// Primary i of a local cluster owns the i-th of the even slot ranges, as the model's primary i
	// does (capacity.PrimaryOfSlot): the two are compared by index.
	cr := &clusterRuns{cl: cl, state: state, out: out, logf: o.Logf}
	for _, n := range cl.Primaries() {
		cr.addrs = append(cr.addrs, n.Addr)
	}
	s := onePrimary(spec, o.Primaries)
	s.Duration = scenarios.Duration(o.RunLength)
	m.Levels = make([]LevelRuns, len(holdoutLevels))
	cpu, secs := make([]float64, o.Primaries), 0.0
	for range o.Repeats {
		for i, level := range holdoutLevels {
			rate := math.Round(level * m.SaturationRPS)
			r, err := cr.run(ctx, fmt.Sprintf("p99-%.0f", 100*level), s, rate)
			if err != nil {
				return err
			}
			l := &m.Levels[i]
			l.Level, l.Rate = level, rate
			// A run that answered nothing has no p99: it is left out, and a level left with
			// none is reported as missing.
			if p := r.sum.LatencyServedMs.P99; p > 0 {
				l.P99Ms = append(l.P99Ms, p)
			}
			if i == len(holdoutLevels)-1 {
				for k := range cpu {
					cpu[k] += r.after[k].CPUSeconds - r.before[k].CPUSeconds
				}
				secs += r.sum.DurationS
			}
		}
	}
	for i := range m.Levels {
		m.Levels[i].MedianP99Ms = median(append([]float64(nil), m.Levels[i].P99Ms...))
	}
	for k := range cpu {
		m.BusyShare = append(m.BusyShare, cpu[k]/math.Max(secs, 1e-9))
	}
	m.Busiest = argmax(m.BusyShare)
	for _, theta := range holdoutThetas {
		t := s
		t.Tenants.Theta = theta
		r, err := cr.run(ctx, fmt.Sprintf("shares-zipf%g", theta), t, m.Levels[0].Rate)
		if err != nil {
			return err
		}
		sr := ShareRun{Theta: theta, Rate: m.Levels[0].Rate, Calls: r.calls()}
		total := float64(sumInt(sr.Calls))
		for _, c := range sr.Calls {
			sr.Shares = append(sr.Shares, float64(c)/math.Max(total, 1))
		}
		m.Shares = append(m.Shares, sr)
	}
	return nil
}
