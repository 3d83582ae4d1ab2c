package compare

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"ratelab/results"
)

// ErrNoRuns is wrapped by Load when a path holds no run: neither a summary.json nor rep-*/summary.json.
var ErrNoRuns = errors.New("no runs found")

// ErrSchemas is wrapped by Load and Compare when runs of different summary schemas meet (v1 with
// v2): their latency and overspend are defined differently, so a difference between them would
// measure the definitions, not the build.
var ErrSchemas = errors.New("summary schemas differ")

// Rep is one loaded repetition: where it came from and its summary.
type Rep struct {
	Dir     string
	Summary *results.Summary
}

// Set is one side of a comparison: every completed run found under its paths.
type Set struct {
	// Paths are the arguments the set was loaded from.
	Paths []string
	// Runs are the completed runs, in path order then repetition order.
	Runs []Rep
	// Skipped names the runs left out and why (an interrupted repetition measured less).
	Skipped []string
	// Schema is the runs' summary schema (results.SchemaSummary, or results.SchemaSummaryV1 for
	// runs of an older ratelab): the same for every run, as Load refuses a mix.
	Schema string
}

// Scenarios lists the distinct scenario names of the set's runs.
func (s *Set) Scenarios() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.Runs {
		if !seen[r.Summary.Scenario] {
			seen[r.Summary.Scenario] = true
			out = append(out, r.Summary.Scenario)
		}
	}
	return out
}

// Load reads a set of runs from paths. Each path is a run directory (with summary.json), a
// directory of repetitions (rep-*/summary.json, as `ratelab run --repeat` writes), or a
// summary.json file. Interrupted runs are left out and listed in Skipped. An error names the
// path and what is missing; runs of two summary schemas in one set are refused (ErrSchemas).
func Load(paths ...string) (*Set, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("load runs: no path given: %w", ErrNoRuns)
	}
	set := &Set{Paths: paths}
	var first string // the directory of the first run, named when a later one's schema differs
	for _, p := range paths {
		files, err := summaryFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			s, err := results.ReadSummary(f)
			if err != nil {
				return nil, err
			}
			dir := filepath.Dir(f)
			if set.Schema == "" {
				set.Schema, first = s.Schema, dir
			} else if s.Schema != set.Schema {
				return nil, fmt.Errorf("load runs %v: %s is a %s run, %s a %s one; rerun the older runs with this ratelab (it writes %s): %w",
					paths, first, set.Schema, dir, s.Schema, results.SchemaSummary, ErrSchemas)
			}
			if s.Interrupted {
				set.Skipped = append(set.Skipped, fmt.Sprintf("%s: interrupted after %.1f s", dir, s.DurationS))
				continue
			}
			set.Runs = append(set.Runs, Rep{Dir: dir, Summary: s})
		}
	}
	if len(set.Runs) == 0 {
		return nil, fmt.Errorf("load runs %v: every run found was interrupted (%v): %w", paths, set.Skipped, ErrNoRuns)
	}
	return set, nil
}

// summaryFiles resolves one path to the summary files it stands for.
func summaryFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("load runs: %w; give a run directory, a directory of rep-*/ repetitions or a summary.json", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	own := filepath.Join(p, results.SummaryFile)
	if _, err := os.Stat(own); err == nil {
		return []string{own}, nil
	}
	reps, err := filepath.Glob(filepath.Join(p, "rep-*", results.SummaryFile))
	if err != nil {
		return nil, fmt.Errorf("load runs %s: %w", p, err)
	}
	if len(reps) == 0 {
		return nil, fmt.Errorf("load runs: %s has neither %s nor rep-*/%s (run `ratelab run --repeat N --out %s` to make one): %w",
			p, results.SummaryFile, results.SummaryFile, p, ErrNoRuns)
	}
	sort.Strings(reps)
	return reps, nil
}
