package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"ratelab/results"
)

// wrkScript cycles the API keys and prints wrk's summary as one JSON line (wrkMarker first).
//
//go:embed wrk.lua
var wrkScript []byte

// wrkMarker starts the line wrk.lua's done prints.
const wrkMarker = "RATELAB_WRK "

// wrkThreads is wrk's -t: one thread (one event loop, like redis-benchmark) leaves the other
// core to the server under test on a 2-core machine.
const wrkThreads = 1

// wrkResult is what wrk.lua prints: counts, the run's duration and latency percentiles in µs.
type wrkResult struct {
	Requests   int64   `json:"requests"`
	DurationUs float64 `json:"duration_us"`
	Connect    int64   `json:"connect"`
	Read       int64   `json:"read"`
	Write      int64   `json:"write"`
	Status     int64   `json:"status"`
	Timeout    int64   `json:"timeout"`
	P50Us      float64 `json:"p50_us"`
	P99Us      float64 `json:"p99_us"`
	// cpu is wrk's own CPU time (user + system), from its process state.
	cpu time.Duration
}

// writeWrkScript writes wrk.lua into dir and returns its path.
func writeWrkScript(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	path := filepath.Join(dir, "wrk.lua")
	if err := results.WriteFileAtomic(path, wrkScript); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return path, nil
}

// runWrk runs wrk closed loop against url for d with opts.GatewayConns connections and returns
// its result and the command line.
func runWrk(ctx context.Context, opts Options, script, url string, d time.Duration) (wrkResult, string, error) {
	args := []string{
		"-t", strconv.Itoa(wrkThreads), "-c", strconv.Itoa(opts.GatewayConns),
		"-d", strconv.Itoa(int(d.Seconds())) + "s", "--timeout", "5s", "-s", script, url,
	}
	env := []string{"RATELAB_WRK_TENANTS=" + strconv.Itoa(gatewayTenants), "RATELAB_WRK_PATH=/api"}
	cmd := exec.CommandContext(ctx, opts.Wrk, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// The line names the script by its place in the repository: the copy run is a temp file.
	shown := slices.Clone(args)
	shown[len(shown)-2] = "studies/bench/wrk.lua"
	line := strings.Join(env, " ") + " " + opts.Wrk + " " + strings.Join(shown, " ")
	out, err := cmd.Output()
	if err != nil {
		return wrkResult{}, line, fmt.Errorf("%s: %w: %s (install wrk: apt-get install wrk)", line, err, strings.TrimSpace(stderr.String()))
	}
	r, err := parseWrk(out)
	if err != nil {
		return wrkResult{}, line, fmt.Errorf("%s: %w", line, err)
	}
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return r, line, nil
}

// parseWrk finds wrk.lua's line in wrk's output and decodes it.
func parseWrk(out []byte) (wrkResult, error) {
	for _, line := range strings.Split(string(out), "\n") {
		js, ok := strings.CutPrefix(strings.TrimSpace(line), wrkMarker)
		if !ok {
			continue
		}
		var r wrkResult
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			return wrkResult{}, fmt.Errorf("wrk.lua summary %q: %w", js, err)
		}
		if r.DurationUs <= 0 || r.Requests < 0 {
			return wrkResult{}, fmt.Errorf("wrk.lua summary %q: want a positive duration and a request count", js)
		}
		return r, nil
	}
	return wrkResult{}, fmt.Errorf("wrk printed no %q line (its output: %q)", strings.TrimSpace(wrkMarker), out)
}
