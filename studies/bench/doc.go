// Package bench is `ratelab bench`: Measure, in one invocation on one local Redis Cluster,
// measures the six sections that say whether ratelab is fast enough to measure a limiter, and
// writes them as results/bench/README.md (a Markdown table, the command and the machine) and
// raw.json:
//
//  1. the generator alone (engine.Run of a no-op limiter): decisions/s and schedule lag p99;
//  2. the in-memory token bucket: decisions/s and allocations per decision;
//  3. central Redis decisions, closed loop at equal concurrency: plain go-redis calls, go-redis
//     AutoPipeline, and limiter.CoalescingBucket; decisions/s, p50, p99; and beside them the
//     open loop: the built-in hot-tenant (100,000 offered over three primaries) with its CPU per
//     decision (generator, primaries, replicas) and the primaries' script calls per read;
//  4. the ceiling: redis-benchmark running EVALSHA of the same script against the same primary
//     with the same connections and pipeline depth, and the ratio of the best central mode to it;
//  5. lease mode at 100,000 offered decisions/s (the built-in hot-tenant-lease on this cluster):
//     achieved ratio and p99;
//  6. the HTTP gateway: limiter/gateway's handler served in this process on a loopback port,
//     loaded closed loop by wrk at fixed connections, as a bare net/http handler, with the
//     in-memory bucket and with the Redis coalescing bucket; requests/s, p50, p99 and each
//     gateway's rate over the bare handler's.
//
// Options.Repeat runs every section several times; the table shows each figure's median and
// range and, for every target, in how many repetitions it was met.
//
// Sections 3 and 4 also read the target primary's INFO around each run (cluster.ReadNodeStats):
// how busy its main thread was and its CPU per call.
//
// Whether a figure is good enough is for its reader: the report states each target beside the
// measured values and whether they met it, and no target fails the run. It owns no limiter,
// engine or simulation code; it drives the public entry points.
package bench
