package capacity

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"ratelab/results"
)

// writeSweep writes capacity.json, capacity.md and the charts into res.Dir.
func writeSweep(res *SweepResult) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", JSONFile, err)
	}
	if err := results.WriteFileAtomic(filepath.Join(res.Dir, JSONFile), append(b, '\n')); err != nil {
		return err
	}
	if err := writeCharts(res); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(res.Dir, MarkdownFile), []byte(Markdown(res)))
}

// Markdown renders a sweep as a short report: the knee of each size, every step, the USL fit.
func Markdown(res *SweepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Capacity sweep: %s\n\n", res.Scenario)
	fmt.Fprintf(&b, "Mode **%s**, steps of %gs, SLO: %s. Rates start at %.0f/s, grow x%g up to %.0f/s, then bisect (at most %d times, to %g%%).\n\n",
		res.Mode, res.StepDurationS, strings.Join(res.SLO, ", "), res.Search.Start, res.Search.Factor, res.Search.Max, res.Search.Bisect, 100*res.Search.Tolerance)
	fmt.Fprintf(&b, "![achieved throughput and p99 against offered rate, knees marked](%s.png)\n\n", ChartStem)
	b.WriteString("## Knee (max sustainable rate)\n\n| primaries | limiter | offered/s | achieved/s | p99 ms | error ratio | note |\n| ---: | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, s := range res.Series {
		if s.Knee == nil {
			fmt.Fprintf(&b, "| %d | %s | - | - | - | - | %s |\n", s.Primaries, s.Limiter, s.Note)
			continue
		}
		k := s.Knee
		fmt.Fprintf(&b, "| %d | %s | %.0f | %.0f | %.3f | %.4f | %s |\n", s.Primaries, s.Limiter, k.Offered, k.Achieved, k.P99Ms, k.ErrorRatio, s.Note)
	}
	b.WriteString("\n## Scalability (USL)\n")
	for _, f := range res.Fits {
		fmt.Fprintf(&b, "\n### %s\n\n", f.Limiter)
		u := f.USL
		if u == nil {
			b.WriteString(f.Note + "\n")
			continue
		}
		fmt.Fprintf(&b, "X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1)) fitted to the knees: lambda = %.0f/s, sigma = %.4f, kappa = %.5f; R² = %.4f, RMSE = %.0f/s.\n",
			u.Lambda, u.Sigma, u.Kappa, u.R2, u.RMSE)
		if u.PeakN != nil {
			fmt.Fprintf(&b, "Predicted peak N* = sqrt((1-sigma)/kappa) = %.1f primaries at %.0f/s.\n", *u.PeakN, *u.PeakX)
		} else {
			b.WriteString("kappa = 0: no retrograde peak within the model (throughput keeps growing, sublinearly when sigma > 0).\n")
		}
		fmt.Fprintf(&b, "\n![USL fit](%s.png)\n\n| N | measured/s | fitted/s |\n| ---: | ---: | ---: |\n", USLChartStem)
		for _, p := range u.Points {
			fmt.Fprintf(&b, "| %g | %.0f | %.0f |\n", p.N, p.Measured, p.Predicted)
		}
	}
	b.WriteString("\n## Steps\n\n| primaries | limiter | phase | offered/s | achieved/s | p50 ms | p99 ms | error ratio | dropped | verdict |\n| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, s := range res.Series {
		for _, st := range s.Steps {
			verdict := "pass"
			if !st.Pass {
				verdict = "fail: " + strings.Join(st.Failed, "; ")
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %.0f | %.0f | %.3f | %.3f | %.4f | %d | %s |\n",
				st.Primaries, st.Limiter, st.Phase, st.Offered, st.Achieved, st.P50Ms, st.P99Ms, st.ErrorRatio, st.Dropped, verdict)
		}
	}
	b.WriteString("\nOn one machine the generator, the client and every Redis node share the cores: a knee here is the machine's, and per-primary scaling is flattened by that sharing (see docs/capacity.md).\n")
	return b.String()
}
