package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/workload"
)

// memoryKeys is the number of tenants of section 2 (hot-tenant's 10,000, one endpoint).
const memoryKeys = 10_000

// measureMemory is section 2: limiter.TokenBucket.Allow (the in-memory twin, as `limiter.kind:
// memory` runs it) on Zipf(0.99) tenants, one goroutine, timed over opts.Seconds; allocations
// per decision from testing.AllocsPerRun. The Zipf draw is part of the loop, as in a run.
func measureMemory(opts Options) Memory {
	tb, err := limiter.NewTokenBucket(limiter.BucketPolicy{Rate: 100, Burst: 200})
	if err != nil {
		panic(err) // a constant, valid policy
	}
	z, err := workload.NewZipf(memoryKeys, 0.99)
	if err != nil {
		panic(err)
	}
	tenants := make([]string, memoryKeys)
	for i := range tenants {
		tenants[i] = "tenant-" + strconv.Itoa(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	now := time.Now()
	// The clock advances 10 µs per decision (100,000 decisions/s of simulated time), so buckets
	// refill and decide both ways, without a clock read in the loop.
	step := func() {
		now = now.Add(10 * time.Microsecond)
		_, _ = tb.Allow(ctx, limiter.Request{Tenant: tenants[z.Draw(rng)], Endpoint: "read", Cost: 1, Now: now})
	}
	// Warm up: every hot key exists, so the measurement is the steady state, not map growth.
	for range 100_000 {
		step()
	}
	allocs := testing.AllocsPerRun(10_000, step)
	var n int
	start := time.Now()
	deadline := start.Add(opts.Seconds)
	for time.Now().Before(deadline) {
		for range 4096 {
			step()
		}
		n += 4096
	}
	took := time.Since(start)
	runtime.KeepAlive(tb)
	ns := float64(took.Nanoseconds()) / float64(n)
	return Memory{DecisionsPerSec: 1e9 / ns, NsPerDecision: ns, AllocsPerDecision: allocs, Keys: memoryKeys}
}
