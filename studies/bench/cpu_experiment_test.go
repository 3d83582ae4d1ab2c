//go:build experiment

package bench

import (
	"context"
	"net"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/lua"
)

// TestRedisCPUPerCall is an experiment, not a test: why does Redis's main thread spend more CPU
// per script call under ratelab's coalescing than under redis-benchmark? It loads one primary
// with each workload twice, alternated, and logs the main thread's CPU per call split into the
// time inside the script (INFO commandstats usec) and the rest (reading, parsing, replying, the
// event loop; commandstats usec is wall time, so on a shared machine it can exceed the CPU).
// Run: go test -tags experiment -run TestRedisCPUPerCall -v ./studies/bench/
func TestRedisCPUPerCall(t *testing.T) {
	ctx := context.Background()
	cl, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 3, Replicas: 1, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tg, err := newTarget(ctx, cl.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Seconds: 4 * time.Second}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	node := redis.NewClient(&redis.Options{Addr: tg.addr})
	defer node.Close()
	if err := node.ScriptLoad(ctx, lua.TokenBucket).Err(); err != nil {
		t.Fatal(err)
	}
	sha := redis.NewScript(lua.TokenBucket).Hash()
	host, port, err := net.SplitHostPort(tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	policy := []string{strconv.FormatFloat(centralPolicy.PerMs(), 'g', -1, 64), "200", "1", "2000"}
	rb := func(extra []string, key string) func() time.Duration {
		return func() time.Duration {
			args := append(slices.Clone(extra), "-n", "160000", "EVALSHA", sha, "1", key, strconv.FormatInt(time.Now().UnixMilli(), 10))
			args = append(args, policy...)
			began := time.Now()
			if out, err := exec.Command("redis-benchmark", append([]string{"-h", host, "-p", port, "-q"}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("redis-benchmark %v: %v %s", args, err, out)
			}
			return time.Since(began)
		}
	}
	co := &variant{mode: modeCoalescing}
	if err := co.open(ctx, opts, tg.addrs); err != nil {
		t.Fatal(err)
	}
	defer co.close()
	coalescing := func(tenants []string) func() time.Duration {
		return func() time.Duration {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			seg, _ := closedLoop(ctx, co.lim, tenants, opts.Conns*opts.Depth, opts.Seconds/2)
			return seg.took
		}
	}
	// spinning runs f while a goroutine keeps the other core busy, as the Go client does during
	// the central variants: does the server's CPU per call depend on what runs beside it?
	spinning := func(f func() time.Duration) func() time.Duration {
		return func() time.Duration {
			var stop atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				for n := 0; !stop.Load(); n++ {
					_ = n * n
				}
			}()
			defer func() { stop.Store(true); <-done }()
			return f()
		}
	}
	// fixedNow is the central coalescing load with every request at one instant, as
	// redis-benchmark's fixed now_ms argument: the buckets never refill, so the script stores
	// whole token counts instead of fractions. The instant is an hour ahead, so that a bucket
	// left by an earlier workload refills to full (a whole count) on its first call.
	fixedNow := func(tenants []string) func() time.Duration {
		return func() time.Duration {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			seg, _ := closedLoop(ctx, atInstant{co.lim, time.Now().Add(time.Hour)}, tenants, opts.Conns*opts.Depth, opts.Seconds/2)
			return seg.took
		}
	}
	tag := "rl:{" + tg.tag + "}:bench-"
	workloads := []struct {
		name string
		run  func() time.Duration
	}{
		{"redis-benchmark -c4 -P64, 10,000 keys in one slot (the ceiling)", rb([]string{"-c", "4", "-P", "64", "-r", "10000"}, tag+"__rand_int__")},
		{"redis-benchmark -c4 -P64, one key", rb([]string{"-c", "4", "-P", "64"}, tag+"one")},
		{"redis-benchmark -c4 -P45, 10,000 keys in one slot", rb([]string{"-c", "4", "-P", "45"}, tag+"__rand_int__")},
		{"redis-benchmark -c4 -P16, 10,000 keys in one slot", rb([]string{"-c", "4", "-P", "16"}, tag+"__rand_int__")},
		{"redis-benchmark -c16 -P16, 10,000 keys in one slot", rb([]string{"-c", "16", "-P", "16"}, tag+"__rand_int__")},
		{"ratelab coalescing, Zipf(0.99) over 10,000 tenants (central)", coalescing(tg.tenants)},
		{"ratelab coalescing, Zipf(0.99) over 64 tenants", coalescing(tg.tenants[:64])},
		{"ratelab coalescing, central's tenants, now fixed (integer tokens)", fixedNow(tg.tenants)},
		{"redis-benchmark as the ceiling, a spinning goroutine beside it", spinning(rb([]string{"-c", "4", "-P", "64", "-r", "10000"}, tag+"__rand_int__"))},
	}
	type tally struct{ cpu, usec, calls, wall float64 }
	got := make([]tally, len(workloads))
	perRound := make([][]float64, len(workloads))
	for range 3 {
		for i, w := range workloads {
			before, err := cluster.ReadNodeStats(ctx, []string{tg.addr})
			if err != nil {
				t.Fatal(err)
			}
			wall := w.run()
			after, err := cluster.ReadNodeStats(ctx, []string{tg.addr})
			if err != nil {
				t.Fatal(err)
			}
			got[i].cpu += after.CPUSeconds - before.CPUSeconds
			got[i].usec += float64(after.Usec - before.Usec)
			got[i].calls += float64(after.Calls - before.Calls)
			got[i].wall += wall.Seconds()
			perRound[i] = append(perRound[i], 1e6*(after.CPUSeconds-before.CPUSeconds)/float64(after.Calls-before.Calls))
		}
	}
	t.Logf("%-66s %9s %7s %9s %9s %9s  %s", "workload", "calls/s", "busy", "µs/call", "in script", "outside", "µs/call by round: median (min–max)")
	for i, w := range workloads {
		g := got[i]
		cpu := 1e6 * g.cpu / g.calls
		in := g.usec / g.calls
		t.Logf("%-66s %9.0f %6.0f%% %9.2f %9.2f %9.2f  %s", w.name, g.calls/g.wall, 100*g.cpu/g.wall, cpu, in, cpu-in,
			spreadOf(perRound[i]).format(3, verb("%.2f")))
	}
}

// atInstant decides every request at one instant.
type atInstant struct {
	lim limiter.Limiter
	at  time.Time
}

func (a atInstant) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	r.Now = a.at
	return a.lim.Allow(ctx, r)
}
