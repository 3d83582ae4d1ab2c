package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// exitSLOFailed is `ratelab run`'s exit code when the run completed but failed an SLO check:
// its files are all written, so the gate reads it like any other run.
const exitSLOFailed = 3

// minNodeTimeout is the least cluster-node-timeout of the gate's cluster. The runs share it on a
// machine that may be starved for seconds (other jobs of a shared runner): with ci-smoke's 1 s a
// stall can fail a primary over in the middle of a run, which no build caused. The scenario has
// no faults (scenarioFile refuses them), so nothing needs a failure detected fast.
const minNodeTimeout = 10 * time.Second

// runStopGrace is how long a run stopped by the gate's cancellation has to write what it
// measured before it is killed.
const runStopGrace = 15 * time.Second

// scenarioFile returns the scenario file both sides run and its spec: a built-in's text written
// to Out/scenario.yaml (so a base whose built-in differs runs the head's), or the file given. The
// scenario must run on a local cluster without faults: the runs share one cluster the gate owns.
func scenarioFile(o Options) (string, *scenarios.Spec, error) {
	path := o.Scenario
	if data, err := scenarios.BuiltinYAML(o.Scenario); err == nil {
		path = filepath.Join(o.Out, "scenario.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", nil, fmt.Errorf("perf-check: %w", err)
		}
	} else if path, err = filepath.Abs(path); err != nil {
		return "", nil, fmt.Errorf("perf-check: scenario = %q: %w", o.Scenario, err)
	}
	spec, err := scenarios.Resolve(path)
	if err != nil {
		return "", nil, fmt.Errorf("perf-check: scenario = %q: %w", o.Scenario, err)
	}
	switch {
	case !spec.NeedsCluster() || spec.Cluster.Provider != scenarios.ProviderLocal:
		return "", nil, fmt.Errorf("perf-check: scenario = %q runs on cluster provider %q: the gate runs both builds on one local cluster it starts; "+
			"choose a scenario with a Redis limiter and cluster.provider local (ci-smoke is one)", o.Scenario, spec.Cluster.Provider)
	case len(spec.Faults) > 0:
		return "", nil, fmt.Errorf("perf-check: scenario = %q has %d faults: the runs share one cluster, which a fault would change for the runs after it; "+
			"choose a scenario without faults (ci-smoke is one)", o.Scenario, len(spec.Faults))
	}
	return path, spec, nil
}

// bench is the shared cluster and the binaries of one gate.
type bench struct {
	o        Options
	scenario string
	state    string
	bins     binaries
	cl       *cluster.Local
}

// runSides starts the cluster and runs the warm-up and the measured runs in order (ABBA with a
// base, the head's alone against a committed baseline), recording the order in res.
func runSides(ctx context.Context, o Options, spec *scenarios.Spec, scenario string, bins binaries, tmp string, res *Result) (err error) {
	b := &bench{o: o, scenario: scenario, bins: bins, state: filepath.Join(tmp, "cluster.json")}
	if err := b.start(ctx, spec); err != nil {
		return err
	}
	defer func() {
		if cerr := b.close(); cerr != nil && err == nil {
			err = fmt.Errorf("perf-check: stopping the cluster: %w", cerr)
		}
	}()
	warm := SideBase
	if res.Mode == Days {
		warm = SideHead
	}
	for i := 1; i <= o.Warmup; i++ {
		if err := b.run(ctx, warm, filepath.Join(tmp, fmt.Sprintf("warmup-%02d", i)), fmt.Sprintf("warm-up %d of %d", i, o.Warmup)); err != nil {
			return err
		}
	}
	res.Order = order(res.Mode, o.Repeat)
	count := map[string]int{}
	for i, side := range res.Order {
		count[side]++
		dir := filepath.Join(o.Out, side, fmt.Sprintf("rep-%02d", count[side]))
		if err := b.run(ctx, side, dir, fmt.Sprintf("run %d of %d: %s", i+1, len(res.Order), side)); err != nil {
			return err
		}
	}
	return nil
}

// order is the sides of the measured runs in the order they run: base, head, head, base, ...
// (ABBA: a drift of the machine over the gate falls on both sides alike), n of each; the head's
// n runs alone in Days mode.
func order(mode Mode, n int) []string {
	out := make([]string, 0, 2*n)
	if mode == Days {
		for range n {
			out = append(out, SideHead)
		}
		return out
	}
	for i := range 2 * n {
		if i%4 == 0 || i%4 == 3 {
			out = append(out, SideBase)
		} else {
			out = append(out, SideHead)
		}
	}
	return out
}

// start starts the local cluster the scenario describes, owned by this process (its nodes die
// with it), and records it in a state file for the runs to attach to.
func (b *bench) start(ctx context.Context, spec *scenarios.Spec) error {
	proxy := b.o.Proxy || b.o.HeadDelay > 0
	logf(b.o, "starting one local Redis Cluster for every run: %d primaries x %d replicas (latency proxies: %v)",
		spec.Cluster.Primaries, *spec.Cluster.Replicas, proxy)
	cl, err := cluster.StartLocal(ctx, cluster.Options{
		Primaries: spec.Cluster.Primaries, Replicas: *spec.Cluster.Replicas,
		NodeTimeout: max(time.Duration(spec.Cluster.NodeTimeout), minNodeTimeout), Proxy: proxy,
	})
	if err != nil {
		return fmt.Errorf("perf-check: starting the cluster: %w", err)
	}
	b.cl = cl
	if err := cl.SaveState(b.state); err != nil {
		return errors.Join(fmt.Errorf("perf-check: %w", err), b.close())
	}
	return nil
}

// close stops the cluster.
func (b *bench) close() error {
	if b.cl == nil {
		return nil
	}
	return b.cl.Close()
}

// empty flushes every current primary, so that every run starts from empty buckets as on a fresh
// cluster: the overspend envelope assumes full buckets, and the previous run's keys (same seed)
// outlive it by their TTL. A fresh client asks the cluster who the primaries are now.
func (b *bench) empty(ctx context.Context) error {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: b.cl.Addrs(), Password: b.cl.Password()})
	defer c.Close()
	return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.FlushAll(ctx).Err()
	})
}

// run runs one side's binary once into dir, on the emptied cluster, with the head's delay
// injected around a head run.
func (b *bench) run(ctx context.Context, side, dir, label string) error {
	if err := b.empty(ctx); err != nil {
		return fmt.Errorf("perf-check: %s: emptying the cluster: %w", label, err)
	}
	if side == SideHead && b.o.HeadDelay > 0 {
		if err := b.setDelay(b.o.HeadDelay); err != nil {
			return err
		}
		defer b.setDelay(0)
	}
	bin := b.bins.head
	if side == SideBase {
		bin = b.bins.base
	}
	logf(b.o, "%s -> %s", label, dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("perf-check: %w", err)
	}
	args := append([]string{"run", b.scenario, "--cluster", string(scenarios.ProviderRunning), "--state", b.state, "--out", dir, "-q"}, b.o.RunArgs...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = runStopGrace
	out, err := cmd.CombinedOutput()
	if werr := os.WriteFile(dir+".log", out, 0o644); werr != nil && err == nil {
		err = werr
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == exitSLOFailed {
		return nil
	}
	if err != nil {
		return fmt.Errorf("perf-check: %s: %s %s: %w\n%s", label, bin, strings.Join(args, " "), err, tail(out, 20))
	}
	return nil
}

// setDelay puts delay on every current primary's proxy; 0 takes it off every node (a primary
// may have become a replica since).
func (b *bench) setDelay(d time.Duration) error {
	nodes := b.cl.Nodes()
	for _, n := range nodes {
		if d > 0 && n.Role != cluster.RolePrimary {
			continue
		}
		if err := b.cl.SetLatency(n.Addr, d, 0); err != nil {
			return fmt.Errorf("perf-check: head delay %v on %s: %w", d, n.Addr, err)
		}
	}
	return nil
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
