package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ratelab/results"
	"ratelab/run/faults"
	"ratelab/scenarios"
	"ratelab/workload"
)

// checkPart refuses a --part the scenario cannot be split by: a bad index or count, more
// parts than tenants (a part would own nothing), or cluster faults against a cluster the
// parts share (each part would inject them once more).
func checkPart(spec *scenarios.Spec, opts Options) error {
	sh := opts.Part
	if err := sh.Validate(); err != nil {
		return fmt.Errorf("--part %s: %w", sh, err)
	}
	if !sh.Split() {
		return nil
	}
	if spec.Tenants.Count < sh.Count {
		return fmt.Errorf("--part %s: the scenario has %d tenants (tenants.count) and part i owns tenants i, i+%d, ...: "+
			"use at most %d parts or more tenants", sh, spec.Tenants.Count, sh.Count, spec.Tenants.Count)
	}
	if p := spec.Cluster.Provider; p == "external" || p == "running" {
		var kinds []string
		for _, f := range spec.Faults {
			if f.OnCluster() {
				kinds = append(kinds, string(f.Kind))
			}
		}
		if len(kinds) > 0 {
			return fmt.Errorf("--part %s: faults %s would be injected once per part into the cluster the parts share (%s); "+
				"run cluster faults whole, or part on local clusters (--cluster local)", sh, strings.Join(kinds, ", "), p)
		}
	}
	return nil
}

// partSummary is the summary's record of opts.Part; nil when the run is not a part.
func partSummary(sh workload.Part) *results.Part {
	if sh == (workload.Part{}) {
		return nil
	}
	return &results.Part{Index: sh.Index, Count: sh.Count}
}

// partNote says in the summary what a part's numbers are a part of ("" for a whole run).
func partNote(sh workload.Part) string {
	if !sh.Split() {
		return ""
	}
	return fmt.Sprintf("part %s: this generator ran tenants i with i mod %d == %d and their share of the schedule only; "+
		"`ratelab merge` combines the parts into the whole run", sh, sh.Count, sh.Index)
}

// MergeRuns merges the run directories of the parts of one load (ratelab run --part i/N) into
// out — default out/<scenario>-merged-<time> — with results.Merge, then re-evaluates what only
// the scenario knows: fault detection and recovery from the merged rows, and the SLO checks of
// the scenario.yaml the parts ran. The caller writes the report (report.Generate), as after a run.
func MergeRuns(out string, dirs ...string) (*Result, error) {
	if out == "" && len(dirs) > 0 {
		s, err := results.ReadSummary(filepath.Join(dirs[0], results.SummaryFile))
		if err != nil {
			return nil, fmt.Errorf("merge %s: %w", dirs[0], err)
		}
		out = results.DefaultMergeDir(s.Scenario, time.Now())
	}
	sum, err := results.Merge(out, dirs, results.WithFinish(func(dir string, sum *results.Summary, rows []results.Interval) error {
		data, err := os.ReadFile(filepath.Join(dir, results.ScenarioFile))
		if err == nil {
			var spec *scenarios.Spec
			if spec, err = scenarios.Parse(results.ScenarioFile, data); err == nil {
				for i := range sum.Faults {
					sum.Faults[i].DetectedS, sum.Faults[i].RecoveredS = 0, 0
				}
				faults.MeasureRecovery(sum.Faults, rows)
				sum.SLO = spec.SLO.Evaluate(sum)
				return nil
			}
		}
		// The data is merged either way; say what could not be judged.
		sum.Load.AddNote(results.NoteSLO, fmt.Sprintf("scenarios.SLO checks and fault recovery not re-evaluated (%v): they are the first part's", err))
		return nil
	}))
	if err != nil {
		return nil, err
	}
	return &Result{Dir: out, Summary: sum}, nil
}
