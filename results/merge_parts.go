package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// PartDirPattern is the name of a part's directory that PartDirs looks for under a run's
// directory: part-0 ... part-(N-1), as the Kubernetes manifests write them.
const PartDirPattern = "part-*"

// ErrPartsIncomplete marks a PartDirs refusal that time may cure: no part has finished yet, a
// part's directory has no summary.json yet (it is still running), or an index of 0..N-1 has
// no directory yet. `ratelab merge --wait` retries those and nothing else.
var ErrPartsIncomplete = errors.New("parts not all finished")

// PartDirs lists the part directories of one load, in part order, for Merge: every directory
// matching PartDirPattern under dir or, when dir holds a glob character (*?[), every directory
// the glob matches. N comes from the parts' own summaries (part.count); PartDirs refuses
// (ErrMerge) a set whose counts differ, that lacks an index of 0..N-1 or has one twice, or
// that holds a run that is not a part, naming the indexes and directories.
func PartDirs(dir string) ([]string, error) {
	pattern := dir
	if !strings.ContainsAny(dir, "*?[") {
		pattern = filepath.Join(dir, PartDirPattern)
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("--parts %s: %v; give a directory or a glob like out/run/part-*: %w", dir, err, ErrMerge)
	}
	byIndex := map[int]string{}
	count, countDir := 0, ""
	for _, m := range matches {
		if fi, err := os.Stat(m); err != nil || !fi.IsDir() {
			continue
		}
		sum, err := ReadSummary(filepath.Join(m, SummaryFile))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--parts %s: %s has no %s yet: a part still running, or one that failed before writing it (rerun it, or merge the others by listing them): %w %w", dir, m, SummaryFile, ErrPartsIncomplete, ErrMerge)
		}
		if err != nil {
			return nil, fmt.Errorf("--parts %s: %s: %w", dir, m, err)
		}
		p := sum.Part
		switch {
		case p == nil || p.Index < 0 || len(p.Merged) > 0:
			return nil, fmt.Errorf("--parts %s: %s is not a part's run (summary.json has no part i/N); move it out of the way: %w", dir, m, ErrMerge)
		case count != 0 && p.Count != count:
			return nil, fmt.Errorf("--parts %s: %s is part %d/%d, %s is of %d parts; parts of one load share N: %w", dir, m, p.Index, p.Count, countDir, count, ErrMerge)
		}
		count, countDir = p.Count, m
		if other, dup := byIndex[p.Index]; dup {
			return nil, fmt.Errorf("--parts %s: part %d/%d twice, in %s and %s; remove one (a rerun?): %w", dir, p.Index, p.Count, other, m, ErrMerge)
		}
		byIndex[p.Index] = m
	}
	if count == 0 {
		return nil, fmt.Errorf("--parts %s: no part directories (%s with a summary.json); is the run's directory right, and have the parts finished? %w %w", dir, pattern, ErrPartsIncomplete, ErrMerge)
	}
	var missing []int
	dirs := make([]string, 0, count)
	for i := range count {
		if d, ok := byIndex[i]; ok {
			dirs = append(dirs, d)
		} else {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("--parts %s: parts %v of %d missing (found %d); wait for them, or merge the parts present by listing their directories (the merge then says which are missing): %w %w",
			dir, missing, count, len(dirs), ErrPartsIncomplete, ErrMerge)
	}
	return dirs, nil
}

// MaxStartSkew is how far apart the parts' load starts may be before Merge warns: rows are
// added by their second since each part's own start, so parts started apart smear the merged
// seconds (totals are unaffected). Parts started with one --start-at have equal starts.
const MaxStartSkew = 500 * time.Millisecond

// startSkewNote warns, for the merged summary's note, when the parts' load starts (from their
// latency.hlog) differ by more than MaxStartSkew; it is empty otherwise.
func startSkewNote(runs []*partRun) string {
	first, last := partStarts(runs)
	if skew := last.Sub(first); skew > MaxStartSkew {
		return fmt.Sprintf("WARNING: the parts' loads started %s apart, so their seconds are added out of step (per-second rows smeared, totals exact); start them with one --start-at",
			skew.Round(time.Millisecond))
	}
	return ""
}

// partStarts returns the earliest and latest of the parts' load starts (from their
// latency.hlog); both are zero when no part recorded its start.
func partStarts(runs []*partRun) (first, last time.Time) {
	for _, r := range runs {
		if r.start.IsZero() {
			continue
		}
		if first.IsZero() || r.start.Before(first) {
			first = r.start
		}
		if last.IsZero() || r.start.After(last) {
			last = r.start
		}
	}
	return first, last
}
