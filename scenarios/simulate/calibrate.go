package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"ratelab/results"
	"ratelab/scenarios/capacity"
)

// Calibration is what the model takes from a measured run.
type Calibration struct {
	Service Service   `json:"service"`
	Client  Empirical `json:"client"`
	// Source says where the numbers come from.
	Source string `json:"source"`
}

// DefaultCalibration is used when no measured calibration is given. Its service time is the
// same committed measurement as capacity.DefaultPerShardRPS: one primary runs the token-bucket
// script at about 80,000 calls/s with pipelined clients (redis-benchmark -P 16 -c 50, DESIGN.md),
// i.e. 12.5 µs of its thread per call; without pipelining it is about 30,000/s (33 µs: pass
// --service-us 33). The spread (cv 0.5) and the client part (0.5 ms: loopback round trip plus
// go-redis, the p50 of a 1,000/s run on one local primary) are coarse; calibrate for real
// numbers (`ratelab simulate calibrate`).
func DefaultCalibration() Calibration {
	return Calibration{
		Service: Service{Kind: Lognormal, MeanUs: 1e6 / capacity.DefaultPerShardRPS, CV: 0.5},
		Client:  ConstantMs(0.5),
		Source:  "default: 80,000 script calls/s per primary (DESIGN.md, pipelined), cv 0.5, client part 0.5 ms",
	}
}

// ReadCalibration reads a Calibration written as JSON (WriteCalibration).
func ReadCalibration(path string) (Calibration, error) {
	var c Calibration
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("calibration %s: %w", path, err)
	}
	if err := c.Service.Validate(); err != nil {
		return c, fmt.Errorf("calibration %s: %w", path, err)
	}
	if err := c.Client.Validate(); err != nil {
		return c, fmt.Errorf("calibration %s: %w", path, err)
	}
	return c, nil
}

// WriteCalibration writes c as indented JSON.
func WriteCalibration(path string, c Calibration) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, append(b, '\n'))
}

// ServerStats is the part of INFO the calibration reads, summed over the nodes it came from.
type ServerStats struct {
	// Calls of the limiter's scripts (EVALSHA and EVAL) and the µs Redis spent inside them.
	Calls int64
	Usec  int64
	// CPUSeconds is the main thread's CPU time (user + sys): commands plus network I/O.
	CPUSeconds float64
	// P50Us and P99Us are Redis's own latency percentiles of EVALSHA (INFO latencystats,
	// Redis 7+); 0 when absent.
	P50Us, P99Us float64
}

// Snapshot reads INFO commandstats, cpu and latencystats from each address and sums them
// (percentiles are taken from the node with the most calls).
func Snapshot(ctx context.Context, addrs []string) (ServerStats, error) {
	var out ServerStats
	most := int64(-1)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		text, err := c.Info(ctx, "commandstats", "cpu", "latencystats").Result()
		_ = c.Close()
		if err != nil {
			return out, fmt.Errorf("INFO on %s: %w", a, err)
		}
		s := parseInfo(text)
		out.Calls += s.Calls
		out.Usec += s.Usec
		out.CPUSeconds += s.CPUSeconds
		if s.Calls > most {
			most, out.P50Us, out.P99Us = s.Calls, s.P50Us, s.P99Us
		}
	}
	return out, nil
}

// parseInfo reads the fields ServerStats needs from INFO text.
func parseInfo(text string) ServerStats {
	var s ServerStats
	cpu := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case k == "cmdstat_evalsha" || k == "cmdstat_eval":
			f := fields(v)
			calls, _ := strconv.ParseInt(f["calls"], 10, 64)
			usec, _ := strconv.ParseInt(f["usec"], 10, 64)
			s.Calls += calls
			s.Usec += usec
		case strings.HasPrefix(k, "used_cpu_"):
			cpu[k], _ = strconv.ParseFloat(v, 64)
		case k == "latency_percentiles_usec_evalsha":
			f := fields(v)
			s.P50Us, _ = strconv.ParseFloat(f["p50"], 64)
			s.P99Us, _ = strconv.ParseFloat(f["p99"], 64)
		}
	}
	if u, ok := cpu["used_cpu_user_main_thread"]; ok {
		s.CPUSeconds = u + cpu["used_cpu_sys_main_thread"]
	} else {
		s.CPUSeconds = cpu["used_cpu_user"] + cpu["used_cpu_sys"]
	}
	return s
}

// fields splits "a=1,b=2" into a map.
func fields(v string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if k, x, ok := strings.Cut(kv, "="); ok {
			out[k] = x
		}
	}
	return out
}

// Calibrate derives the model's inputs from server stats taken before and after a run and the
// run's latency histogram:
//
//   - service mean: the primaries' main-thread CPU time over the run divided by the script calls
//     (so it holds network I/O and parsing, not only the script: what a call costs the thread);
//   - service spread: a lognormal through Redis's own EVALSHA p50 and p99 (sigma =
//     ln(p99/p50)/2.326), i.e. the script's variation applied to the whole call;
//   - client part: the run's latency quantiles minus the mean service time (at a low rate there
//     is almost no queueing, so what is left is network, client library, scheduling and
//     generator lag). Subtracting the mean rather than deconvolving is an approximation that
//     slightly widens the client part's spread.
func Calibrate(before, after ServerStats, lat *results.Histogram) (Calibration, error) {
	calls := after.Calls - before.Calls
	cpu := after.CPUSeconds - before.CPUSeconds
	if calls < 100 {
		return Calibration{}, fmt.Errorf("calibration: %d script calls between the snapshots; run at least a few hundred decisions", calls)
	}
	if lat == nil || lat.Count() == 0 {
		return Calibration{}, errors.New("calibration: the run recorded no latencies")
	}
	meanUs := cpu * 1e6 / float64(calls)
	if !(meanUs > 0) {
		// CPU counters tick in ms-ish steps; fall back on the time inside the scripts.
		meanUs = float64(after.Usec-before.Usec) / float64(calls)
	}
	cv := 0.0
	if after.P50Us > 0 && after.P99Us > after.P50Us {
		sig := math.Log(after.P99Us/after.P50Us) / 2.326
		cv = math.Sqrt(math.Expm1(sig * sig))
	}
	client := Empirical{}
	prev := Quantile{}
	for i, p := range lat.Percentiles() {
		q := Quantile{P: p.Percentile / 100, Ms: math.Max(0, p.Ms-meanUs/1e3)}
		if i == 0 {
			q.P = 0
		}
		if q.P < prev.P || (i > 0 && q.P == prev.P) {
			continue
		}
		q.Ms = math.Max(q.Ms, prev.Ms)
		client = append(client, q)
		prev = q
	}
	if client[len(client)-1].P < 1 {
		client = append(client, Quantile{P: 1, Ms: math.Max(prev.Ms, lat.MaxMs()-meanUs/1e3)})
	}
	return Calibration{
		Service: Service{Kind: Lognormal, MeanUs: meanUs, CV: cv},
		Client:  client,
		Source: fmt.Sprintf("measured: %d calls, %.0f µs CPU per call (script alone %.1f µs), Redis EVALSHA p50 %.0f µs p99 %.0f µs, %d latencies",
			calls, meanUs, float64(after.Usec-before.Usec)/float64(calls), after.P50Us, after.P99Us, lat.Count()),
	}, nil
}
