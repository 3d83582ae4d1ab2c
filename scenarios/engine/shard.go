package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/faults"
	"ratelab/workload"
)

// checkShard refuses a --shard the scenario cannot be split by: a bad index or count, more
// shards than tenants (a shard would own nothing), or cluster faults against a cluster the
// shards share (each shard would inject them once more).
func checkShard(spec *scenarios.Spec, opts Options) error {
	sh := opts.Shard
	if err := sh.Validate(); err != nil {
		return fmt.Errorf("--shard %s: %w", sh, err)
	}
	if !sh.Sharded() {
		return nil
	}
	if spec.Tenants.Count < sh.Count {
		return fmt.Errorf("--shard %s: the scenario has %d tenants (tenants.count) and shard i owns tenants i, i+%d, ...: "+
			"use at most %d shards or more tenants", sh, spec.Tenants.Count, sh.Count, spec.Tenants.Count)
	}
	if p := spec.Cluster.Provider; p == "external" || p == "running" {
		var kinds []string
		for _, f := range spec.Faults {
			if !f.Kind.OnGateway() {
				kinds = append(kinds, string(f.Kind))
			}
		}
		if len(kinds) > 0 {
			return fmt.Errorf("--shard %s: faults %s would be injected once per shard into the cluster the shards share (%s); "+
				"run cluster faults unsharded, or shard on local clusters (--cluster local)", sh, strings.Join(kinds, ", "), p)
		}
	}
	return nil
}

// shardSummary is the summary's record of opts.Shard; nil when the run is not a shard.
func shardSummary(sh workload.Shard) *results.Shard {
	if sh == (workload.Shard{}) {
		return nil
	}
	return &results.Shard{Index: sh.Index, Count: sh.Count}
}

// shardNote says in the summary what a shard's numbers are a part of.
func shardNote(sh workload.Shard) string {
	if !sh.Sharded() {
		return ""
	}
	return fmt.Sprintf("; shard %s: this generator ran tenants i with i mod %d == %d and their share of the schedule only; "+
		"`ratelab merge` combines the shards into the whole run", sh, sh.Count, sh.Index)
}

// MergeRuns merges the run directories of the shards of one load (ratelab run --shard i/N) into
// out — default out/<scenario>-merged-<time> — with results.Merge, then re-evaluates what only
// the scenario knows: fault detection and recovery from the merged rows, and the SLO checks of
// the scenario.yaml the shards ran. The caller writes the report (report.Generate), as after a run.
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
		sum.Load.Note += fmt.Sprintf("; scenarios.SLO checks and fault recovery not re-evaluated (%v): they are the first shard's", err)
		return nil
	}))
	if err != nil {
		return nil, err
	}
	return &Result{Dir: out, Summary: sum}, nil
}
