package engine

import (
	"fmt"
	"time"

	"ratelab/scenarios"
)

// newFirstFailures returns the per-second SLO judge of a run with load stages, nil without.
func newFirstFailures(spec *scenarios.Spec) *scenarios.FirstFailures {
	if len(spec.Load.Stages) == 0 {
		return nil
	}
	return spec.SLO.NewFirstFailures()
}

// loadLine describes the offered load for the run's first log line: the rate, or the stages.
func loadLine(spec *scenarios.Spec) string {
	if len(spec.Load.Stages) == 0 {
		return fmt.Sprintf("%.0f requests/s offered for %s", spec.Load.Rate, time.Duration(spec.Duration))
	}
	return fmt.Sprintf("offered rate ramped from %.0f requests/s along %s (peak %.0f/s) for %s",
		spec.Load.Rate, scenarios.FormatStages(spec.Load.Stages), spec.Load.PeakRate(), time.Duration(spec.Duration))
}

// stagesNote is the summary's note on a run whose duration differs from its stages' total.
func stagesNote(spec *scenarios.Spec) string {
	total, d := scenarios.StagesDuration(spec.Load.Stages), time.Duration(spec.Duration)
	switch {
	case len(spec.Load.Stages) == 0 || total == d:
		return ""
	case d < total:
		return fmt.Sprintf("duration %s cut load.stages (%s in all) short", d, total)
	}
	return fmt.Sprintf("load.stages last %s: the last rate was held to the end of duration %s", total, d)
}
