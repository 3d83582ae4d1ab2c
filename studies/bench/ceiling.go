package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// ceilingRate is the rate the request count of redis-benchmark is sized for, so that each of its
// two runs lasts about half as long as a central variant (it has no duration flag).
const ceilingRate = 80_000

// measureCeiling is section 4: redis-benchmark on the target primary running EVALSHA of
// lua/token_bucket.lua with the central variants' arguments, over Conns connections with
// pipelines of Depth, on 10,000 keys that share the tag of a tenant of that primary (one slot,
// so no MOVED). It first runs the very command once through go-redis and checks the reply, so
// the rate it reports is the rate of real decisions, not of error replies.
func measureCeiling(ctx context.Context, opts Options, t *target) (Ceiling, error) {
	host, port, err := net.SplitHostPort(t.addr)
	if err != nil {
		return Ceiling{}, fmt.Errorf("bench: target address %q: %w", t.addr, err)
	}
	sha := redis.NewScript(lua.TokenBucket).Hash()
	// KeyFor's layout, rl:{tenant}:endpoint, with the endpoint varied by redis-benchmark -r.
	key := "rl:{" + t.tag + "}:bench-__rand_int__"
	nowMs := strconv.FormatInt(time.Now().UnixMilli(), 10)
	args := []string{
		strconv.FormatFloat(centralPolicy.PerMs(), 'g', -1, 64),
		strconv.FormatInt(centralPolicy.Burst, 10), "1",
		strconv.FormatInt(centralPolicy.TTL().Milliseconds(), 10),
	}
	node := redis.NewClient(&redis.Options{Addr: t.addr})
	defer node.Close()
	if err := node.ScriptLoad(ctx, lua.TokenBucket).Err(); err != nil {
		return Ceiling{}, fmt.Errorf("bench: SCRIPT LOAD on %s: %w", t.addr, err)
	}
	probe := []any{nowMs}
	for _, a := range args {
		probe = append(probe, a)
	}
	reply, err := node.EvalSha(ctx, sha, []string{strings.ReplaceAll(key, "__rand_int__", "000000000000")}, probe...).Result()
	if err != nil {
		return Ceiling{}, fmt.Errorf("bench: EVALSHA probe on %s: %w", t.addr, err)
	}
	if arr, ok := reply.([]any); !ok || len(arr) != 4 {
		return Ceiling{}, fmt.Errorf("bench: EVALSHA probe on %s replied %v, want 4 integers", t.addr, reply)
	}
	n := max(int(opts.Seconds.Seconds()/2*ceilingRate), 10*opts.Conns*opts.Depth)
	cmdArgs := []string{
		"-h", host, "-p", port, "-c", strconv.Itoa(opts.Conns), "-P", strconv.Itoa(opts.Depth),
		"-n", strconv.Itoa(n), "-r", strconv.Itoa(centralTenants), "--csv",
		"EVALSHA", sha, "1", key, nowMs,
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := exec.CommandContext(ctx, opts.RedisBenchmark, cmdArgs...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// The wall time holds redis-benchmark's start and its connection set-up: busy reads a
	// little low, never high.
	var (
		use    serverUse
		out    []byte
		runErr error
	)
	if err := use.during(ctx, t.addr, func() time.Duration {
		began := time.Now()
		out, runErr = cmd.Output()
		return time.Since(began)
	}); err != nil {
		return Ceiling{}, err
	}
	line := opts.RedisBenchmark + " " + strings.Join(cmdArgs, " ")
	if runErr != nil {
		return Ceiling{}, fmt.Errorf("bench: %s: %w: %s (install redis-tools: make redis)", line, runErr, strings.TrimSpace(stderr.String()))
	}
	c, err := parseBenchCSV(out)
	if err != nil {
		return Ceiling{}, fmt.Errorf("bench: %s: %w", line, err)
	}
	c.Command, c.Conns, c.Depth, c.Requests = line, opts.Conns, opts.Depth, n
	c.RedisBusy, c.RedisUsPerCall, c.use = use.busy(), use.usPerCall(), use
	opts.Logf("bench:   %-22s %8.0f requests/s  p50 %.3f ms  p99 %.3f ms  Redis busy %.0f%% (%.1f µs/call)", "redis-benchmark",
		c.RequestsPerSec, c.P50Ms, c.P99Ms, 100*c.RedisBusy, c.RedisUsPerCall)
	return c, nil
}

// parseBenchCSV reads redis-benchmark --csv output: a header
// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms",...
// and one row per test. Columns are found by name, so an older or newer layout fails loudly.
func parseBenchCSV(out []byte) (Ceiling, error) {
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return Ceiling{}, fmt.Errorf("redis-benchmark --csv output: %w", err)
	}
	if len(rows) < 2 {
		return Ceiling{}, fmt.Errorf("redis-benchmark --csv printed %d rows (%q), want a header and a result", len(rows), out)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	num := func(name string) (float64, error) {
		i, ok := col[name]
		if !ok || i >= len(rows[1]) {
			return 0, fmt.Errorf("redis-benchmark --csv has no %q column in %q", name, rows[0])
		}
		v, err := strconv.ParseFloat(rows[1][i], 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("redis-benchmark --csv %s = %q: want a number >= 0", name, rows[1][i])
		}
		return v, nil
	}
	var c Ceiling
	if c.RequestsPerSec, err = num("rps"); err != nil {
		return Ceiling{}, err
	}
	if c.RequestsPerSec <= 0 {
		return Ceiling{}, fmt.Errorf("redis-benchmark measured 0 requests/s")
	}
	if c.P50Ms, err = num("p50_latency_ms"); err != nil {
		return Ceiling{}, err
	}
	if c.P99Ms, err = num("p99_latency_ms"); err != nil {
		return Ceiling{}, err
	}
	return c, nil
}

// benchVersion returns `redis-benchmark --version`'s first line, or "" when it fails.
func benchVersion(ctx context.Context, bin string) string {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}
