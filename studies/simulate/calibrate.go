package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"

	"ratelab/cluster"
	"ratelab/results"
	"ratelab/studies/capacity"
)

// Calibration is what the model takes from a measured run.
type Calibration struct {
	Service Service `json:"service"`
	// Client is the round trip outside the primary's thread (network, client library) of the
	// decisions no scheduling gap touched (Gaps.Body minus the service mean).
	Client Empirical `json:"client"`
	// Gaps is the light-load run's scheduling gaps (FitGaps); Host is filled from them and a
	// saturation probe (CoLocate) for the co-located model, nil until then.
	Gaps Gaps  `json:"gaps"`
	Host *Host `json:"host,omitempty"`
	// Load, with Host, is the gaps fitted at two more calibration rates (WithLoad): the host's
	// share of time off then follows the rate simulated (HostAt). nil: the light run's gaps.
	Load *HostLoad `json:"host_load,omitempty"`
	// ClientCPUUs is the client process's CPU per decision and RedisCPUUs the nodes' CPU (all
	// threads) per script call, µs: at the calibration rate, or with a probe the marginal cost
	// between the two runs (fixed per-second costs, timers and cron, left out).
	ClientCPUUs float64 `json:"client_cpu_us"`
	RedisCPUUs  float64 `json:"redis_cpu_us"`
	// Source says where the numbers come from.
	Source string `json:"source"`
}

// DefaultCalibration is used when no measured calibration is given. Its service time is
// capacity.DefaultPerPrimaryRPS's: the rate one primary runs the token-bucket script at for
// pipelining clients, as a share of its thread per call. Clients that do not pipeline cost the
// thread more per call (pass --service-us; docs/capacity.md has both rates). The spread (cv 0.5)
// and the client time (0.5 ms: a loopback round trip plus go-redis) are coarse; calibrate for
// real numbers (`ratelab simulate calibrate`).
func DefaultCalibration() Calibration {
	return Calibration{
		Service: Service{Kind: Lognormal, MeanUs: 1e6 / capacity.DefaultPerPrimaryRPS, CV: 0.5},
		Client:  ConstantMs(0.5),
		Source:  "default: 80,000 script calls/s per primary (pipelined; docs/capacity.md), cv 0.5, client time 0.5 ms",
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
	if c.Host != nil {
		if err := c.Host.Validate(); err != nil {
			return c, fmt.Errorf("calibration %s: %w", path, err)
		}
	}
	if c.Load != nil {
		if err := c.Load.Validate(); err != nil {
			return c, fmt.Errorf("calibration %s: %w", path, err)
		}
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

// Calibrate derives the model's inputs from server stats taken before and after a run at a
// light load (far below the machine's capacity) and the run's latency histogram:
//
//   - service mean: the primaries' main-thread CPU time over the run divided by the script calls
//     (so it holds network I/O and parsing, not only the script: what a call costs the thread);
//   - service spread: a lognormal through Redis's own EVALSHA p50 and p99 (sigma =
//     ln(p99/p50)/2.326), i.e. the script's variation applied to the whole call;
//   - scheduling gaps (FitGaps): the latency tail of decisions that arrived while the machine ran
//     other threads, as an off share and a mean gap length;
//   - client time: the body of the latencies (below the gaps' threshold) minus the mean service
//     time — network, client library, the dispatch of an idle generator. Subtracting the mean
//     rather than deconvolving is an approximation that slightly widens its spread.
func Calibrate(before, after cluster.NodeStats, lat *results.Histogram) (Calibration, error) {
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
	gaps := FitGaps(lat)
	return Calibration{
		Service:    Service{Kind: Lognormal, MeanUs: meanUs, CV: cv},
		Client:     gaps.Body.shift(-meanUs / 1e3),
		Gaps:       gaps,
		RedisCPUUs: (after.TotalCPUSeconds - before.TotalCPUSeconds) * 1e6 / float64(calls),
		Source: fmt.Sprintf("measured: %d calls, %.0f µs CPU per call (script alone %.1f µs), Redis EVALSHA p50 %.0f µs p99 %.0f µs, %d latencies, %.1f%% above %.1f ms (gaps: off %.1f%% of the time, mean %.1f ms, sigma %.2f)",
			calls, meanUs, float64(after.Usec-before.Usec)/float64(calls), after.P50Us, after.P99Us, lat.Count(),
			100*gaps.TailShare, gaps.ThresholdMs, 100*gaps.OffFraction, gaps.OffMeanMs, gaps.OffSigma),
	}, nil
}

// shift adds ms to every quantile, clamping at 0.
func (e Empirical) shift(ms float64) Empirical {
	out := make(Empirical, len(e))
	for i, q := range e {
		out[i] = Quantile{P: q.P, Ms: math.Max(0, q.Ms+ms)}
	}
	return out
}

// CoLocate completes c for the co-located model with the machine's capacity for the limiter's
// work, capacityRPS (a saturation probe's answered rate), and the light run's rate lightRPS:
// Host takes the gaps and the capacity, and the client time loses the host's own CPU time per
// decision, which the model now adds.
//
// The light run is not quite free of queueing: a decision that arrived a into a gap finds the
// lambda*a decisions that arrived before it ahead of it when the gap ends, and waits their CPU
// too, so its excess is the rest of the gap plus rho_on times its age (rho_on = lambda x the
// CPU time of one decision at full speed). Rest and age have the same mean: the observed
// residuals are (1 + rho_on) times the gaps', and the gaps' mean is divided by that.
func (c Calibration) CoLocate(capacityRPS, lightRPS float64) (Calibration, error) {
	h := Host{CapacityRPS: capacityRPS, OffFraction: c.Gaps.OffFraction, OffMeanMs: c.Gaps.OffMeanMs, OffSigma: c.Gaps.OffSigma}
	if h.OffFraction > 0 {
		h.OffMeanMs = h.gapMeanAt(h.OffMeanMs, lightRPS)
	}
	if err := h.Validate(); err != nil {
		return c, err
	}
	c.Host = &h
	c.Client = c.Client.shift(-1e3 * h.workS())
	c.Source += fmt.Sprintf("; co-located: %.0f decisions/s at saturation, gaps corrected for the light run's queueing: off %.1f%%, mean %.1f ms, sigma %.2f",
		capacityRPS, 100*h.OffFraction, h.OffMeanMs, h.OffSigma)
	return c, nil
}

// WithLoad completes a co-located calibration (CoLocate) with the gaps of two more runs, lo and
// hi (FitGaps), at loRPS < hiRPS, far enough apart to tell how the gaps grow with our own load
// (HostLoad). Their gaps' means are corrected for their runs' queueing as CoLocate corrects the
// light run's, and replace the light run's.
func (c Calibration) WithLoad(lo Gaps, loRPS float64, hi Gaps, hiRPS float64) (Calibration, error) {
	if c.Host == nil {
		return c, errors.New("calibration: the gap runs need a co-located calibration (a saturation probe) first")
	}
	if !(loRPS > 0 && hiRPS > loRPS) {
		return c, fmt.Errorf("calibration: gap runs at %.0f/s and %.0f/s: want 0 < low < high", loRPS, hiRPS)
	}
	h := *c.Host
	l := HostLoad{LowRPS: loRPS, LowOff: lo.OffFraction, HighRPS: hiRPS, HighOff: hi.OffFraction,
		Law: DefaultHostLaw, Cores: runtime.NumCPU()}
	// The gaps' length: both fits, weighted by the delayed decisions each saw.
	wl, wh := lo.OffFraction*float64(lo.Decisions), hi.OffFraction*float64(hi.Decisions)
	if wl+wh > 0 {
		h.OffMeanMs = (wl*h.gapMeanAt(lo.OffMeanMs, loRPS) + wh*h.gapMeanAt(hi.OffMeanMs, hiRPS)) / (wl + wh)
		h.OffSigma = (wl*lo.OffSigma + wh*hi.OffSigma) / (wl + wh)
	}
	if err := h.Validate(); err != nil {
		return c, err
	}
	c.Host, c.Load = &h, &l
	c.Source += fmt.Sprintf("; gaps grow with the rate (%s law on %d cores): off %.2f%% at %.0f/s, %.2f%% at %.0f/s, mean %.1f ms, sigma %.2f",
		l.Law, l.Cores, 100*l.LowOff, l.LowRPS, 100*l.HighOff, l.HighRPS, h.OffMeanMs, h.OffSigma)
	return c, nil
}

// HostAt is the co-located host at rate: Host, with its share of time off carried from the two gap
// runs' to rate by the calibration's law (HostLoad) when the calibration has them (Load). nil when
// not co-located.
func (c Calibration) HostAt(rate float64) *Host {
	if c.Host == nil || c.Load == nil {
		return c.Host
	}
	h := *c.Host
	h.OffFraction = c.Load.offAt(rate, h.CapacityRPS)
	return &h
}
