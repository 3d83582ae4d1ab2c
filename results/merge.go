package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ErrMerge: the runs given to Merge are not parts of one load (another scenario, seed or part
// count, the same part twice, a run that is not a part). The message names the directories.
var ErrMerge = errors.New("runs cannot be merged")

// MergeOption configures Merge.
type MergeOption func(*mergeConfig)

type mergeConfig struct {
	finish func(dir string, sum *Summary, rows []Interval) error
}

// WithFinish has Merge call f with the merged run's directory (holding scenario.yaml already),
// summary and rows before it writes the summary: the place to re-evaluate what only the scenario
// knows (SLO checks, fault recovery from the merged rows). Without it the parts' SLO checks are
// kept as the first part recorded them, and the note says they were not re-evaluated.
func WithFinish(f func(dir string, sum *Summary, rows []Interval) error) MergeOption {
	return func(c *mergeConfig) { c.finish = f }
}

// MergeHotKeys is how many hot keys a merged summary lists (as many as a run's).
const MergeHotKeys = 10

// partRun is one input directory of Merge, read in full.
type partRun struct {
	dir      string
	sum      *Summary
	hist     *Histogram
	seconds  map[int]*Histogram
	rows     []Interval
	keys     []KeyTally
	scenario []byte
	// start is the run's start from its latency.hlog; zero for a run that wrote
	// latency-seconds.hdr instead.
	start time.Time
}

// Merge combines the run directories of the parts of one load (ratelab run --part i/N, same
// scenario and seed) into the run directory out, which then reads like a single run's: counts
// and rates add (offered, late, drops by cause, lost seconds, clamped latencies, central ops and
// other ops too); latency percentiles come from the merged whole-run histogram and, per second,
// from the merged per-second histograms (exact up to HDR precision, never an average of
// percentiles), over offered requests with the summed drops (LatencyOf) and over answered ones;
// overspend, false denies and their causes add, confirmed and possible, and the ratios are
// recomputed; the burst excess sums add and its worst key is the worst part's; hot keys are
// recomputed from the merged per-key tallies. This is exact because every key's decisions, and
// the envelope that judged them, were in one part. The per-second histograms come from each
// part's latency.hlog, or from latency-seconds.hdr in a part of an older ratelab; the merged
// run has latency.hlog and latency.hgrm, as a run has.
//
// The overspend bound is per key, so it does not add: the merged bound is the largest part's and
// within is judged part by part (see mergeBound). Faults are the first part's list (every part
// ran the same schedule), marked failed when they failed in any part. What cannot be merged
// exactly is said in the summary's load note: the schedule lag p99 is the worst part's, the
// process footprint the largest part's. Missing parts are allowed and named in the note and in
// part.missing; their traffic is absent from every total.
//
// Parts read from v1 summaries merge into a v1 summary by v1's definitions (latency over
// answered requests, whole-run bounds that add), written back as v1, its note starting with
// V1Note.
//
// Merge refuses (ErrMerge) runs of different scenarios (scenario.yaml must be identical), seeds,
// part counts or summary schemas (v1 with v2), the same part twice, and runs that are not parts.
// out must not be one of dirs.
func Merge(out string, dirs []string, opts ...MergeOption) (*Summary, error) {
	var cfg mergeConfig
	for _, o := range opts {
		o(&cfg)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("merge: no run directories given; pass the parts' directories: %w", ErrMerge)
	}
	if out == "" {
		return nil, fmt.Errorf("merge: no output directory; name one (see DefaultMergeDir): %w", ErrMerge)
	}
	runs := make([]*partRun, 0, len(dirs))
	for _, d := range dirs {
		if same, _ := sameDir(d, out); same {
			return nil, fmt.Errorf("merge: output directory %s is also an input; write the merge to a new directory (--out): %w", out, ErrMerge)
		}
		r, err := readPartRun(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := checkMergeable(runs); err != nil {
		return nil, err
	}
	slices.SortFunc(runs, func(a, b *partRun) int { return a.sum.Part.Index - b.sum.Part.Index })

	hist := NewHistogram()
	for _, r := range runs {
		hist.Merge(r.hist)
	}
	rows, seconds := mergeRows(runs)
	keys := mergeTallies(runs)
	sum := mergeSummaries(runs, hist, keys)
	sum.Load.AddNote(NoteMerge, startSkewNote(runs))
	if cfg.finish == nil {
		sum.Load.AddNote(NoteSLO, "SLO checks not re-evaluated (merged without the scenario): they are the first part's")
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("merge: output directory: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(out, ScenarioFile), runs[0].scenario); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if err := writeMergedSeries(out, mergedStart(runs, sum), rows, seconds, RunCounts(sum, hist)); err != nil {
		return nil, err
	}
	if err := writeFile(out, TallyFile, func(w io.Writer) error { return WriteTally(w, keys) }); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if cfg.finish != nil {
		if err := cfg.finish(out, sum, rows); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	if err := WriteRunFiles(out, sum, hist); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return sum, nil
}

// sameDir reports whether a and b name the same directory (b need not exist).
func sameDir(a, b string) (bool, error) {
	aa, err := filepath.Abs(a)
	if err != nil {
		return false, err
	}
	bb, err := filepath.Abs(b)
	if err != nil {
		return false, err
	}
	return filepath.Clean(aa) == filepath.Clean(bb), nil
}

// readPartRun reads everything Merge needs from one run directory.
func readPartRun(dir string) (*partRun, error) {
	r := &partRun{dir: dir}
	var err error
	if r.sum, err = ReadSummary(filepath.Join(dir, SummaryFile)); err != nil {
		return nil, fmt.Errorf("merge %s: %w", dir, err)
	}
	if r.scenario, err = os.ReadFile(filepath.Join(dir, ScenarioFile)); err != nil {
		return nil, fmt.Errorf("merge %s: %w", dir, err)
	}
	open := func(name string, read func(f *os.File) error) error {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("merge %s: %w (a run of this ratelab version writes it; rerun the part)", dir, err)
		}
		defer f.Close()
		if err := read(f); err != nil {
			return fmt.Errorf("merge %s: %w", dir, err)
		}
		return nil
	}
	type step struct {
		name string
		read func(f *os.File) error
	}
	seconds := step{LatencyLogFile, func(f *os.File) error {
		l, err := ReadLatencyLog(f)
		if l != nil {
			r.seconds, r.start = l.Seconds, l.Start
		}
		return err
	}}
	if _, err := os.Stat(filepath.Join(dir, LatencyLogFile)); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, SecondsHistogramFile)); err == nil {
			// A run of an older ratelab wrote the seconds' histograms in its own line format.
			seconds.name = SecondsHistogramFile
			seconds.read = func(f *os.File) (err error) { r.seconds, err = ReadSecondsHistograms(f); return err }
		}
	}
	steps := []step{
		{HistogramFile, func(f *os.File) (err error) { r.hist, err = ReadHistogram(f); return err }},
		seconds,
		{TimeseriesFile, func(f *os.File) (err error) { r.rows, err = ReadTimeseries(f); return err }},
		{TallyFile, func(f *os.File) (err error) { r.keys, err = ReadTally(f); return err }},
	}
	for _, s := range steps {
		if err := open(s.name, s.read); err != nil {
			// An interrupted part's last line may be cut short: keep what it wrote, as the
			// report does.
			if errors.Is(err, ErrTruncated) && s.name != HistogramFile {
				continue
			}
			return nil, err
		}
	}
	return r, nil
}

// checkMergeable refuses inputs that are not the parts of one load.
func checkMergeable(runs []*partRun) error {
	first := runs[0]
	byIndex := map[int]string{}
	for _, r := range runs {
		s := r.sum
		switch {
		case s.Part == nil:
			return fmt.Errorf("merge %s: not a part's run (summary.json has no part); merge the directories of `ratelab run --part i/N`: %w", r.dir, ErrMerge)
		case len(s.Part.Merged) > 0 || s.Part.Index < 0:
			return fmt.Errorf("merge %s: already a merged run (parts %v); merge the parts' own directories instead: %w", r.dir, s.Part.Merged, ErrMerge)
		case s.Scenario != first.sum.Scenario:
			return fmt.Errorf("merge: %s ran scenario %q, %s ran %q; merge parts of one scenario: %w", r.dir, s.Scenario, first.dir, first.sum.Scenario, ErrMerge)
		case s.Schema != first.sum.Schema:
			return fmt.Errorf("merge: %s is a %s summary, %s a %s one: the definitions differ (latency over answered or offered requests, overspend ranges); "+
				"rerun the older parts with this ratelab: %w", r.dir, s.Schema, first.dir, first.sum.Schema, ErrMerge)
		case s.Seed != first.sum.Seed:
			return fmt.Errorf("merge: %s ran seed %d, %s seed %d; parts must share the seed (they split one schedule): %w", r.dir, s.Seed, first.dir, first.sum.Seed, ErrMerge)
		case s.Part.Count != first.sum.Part.Count:
			return fmt.Errorf("merge: %s is part %d/%d, %s is %d/%d; parts must have the same count: %w",
				r.dir, s.Part.Index, s.Part.Count, first.dir, first.sum.Part.Index, first.sum.Part.Count, ErrMerge)
		case !bytes.Equal(r.scenario, first.scenario):
			return fmt.Errorf("merge: %s and %s have different %s (another rate, duration, policy or limiter?); parts must run the same resolved scenario: %w",
				r.dir, first.dir, ScenarioFile, ErrMerge)
		}
		if other, dup := byIndex[s.Part.Index]; dup {
			return fmt.Errorf("merge: %s and %s are both part %d/%d: overlapping parts would count their tenants twice; pass each part once: %w",
				other, r.dir, s.Part.Index, s.Part.Count, ErrMerge)
		}
		byIndex[s.Part.Index] = r.dir
	}
	return nil
}

// mergeRows sums the parts' rows second by second; per-second latencies come from the merged
// per-second histograms.
func mergeRows(runs []*partRun) ([]Interval, map[int]*Histogram) {
	bySec := map[int]*Interval{}
	seconds := map[int]*Histogram{}
	last := -1
	for _, r := range runs {
		for _, row := range r.rows {
			sec := int(row.TS)
			dst, ok := bySec[sec]
			if !ok {
				dst = &Interval{TS: row.TS}
				bySec[sec] = dst
			}
			addInterval(dst, &row)
			last = max(last, sec)
		}
		for sec, h := range r.seconds {
			if seconds[sec] == nil {
				seconds[sec] = NewHistogram()
			}
			seconds[sec].Merge(h)
		}
	}
	rows := make([]Interval, 0, last+1)
	for sec := 0; sec <= last; sec++ {
		iv, ok := bySec[sec]
		if !ok {
			continue
		}
		iv.P50Ms, iv.P90Ms, iv.P99Ms, iv.P999Ms, iv.MaxMs = 0, 0, 0, 0, 0
		if h := seconds[sec]; h != nil && h.Count() > 0 {
			iv.P50Ms, iv.P90Ms, iv.P99Ms = h.QuantileMs(50), h.QuantileMs(90), h.QuantileMs(99)
			iv.P999Ms, iv.MaxMs = h.QuantileMs(99.9), h.MaxMs()
		}
		rows = append(rows, *iv)
	}
	return rows, seconds
}

// addInterval adds row's counts to dst. Faults and the policy version are the same in every
// part (one schedule, one tariff file): they take the largest, not the sum; the time is the
// earliest part's.
func addInterval(dst, row *Interval) {
	if !row.Time.IsZero() && (dst.Time.IsZero() || row.Time.Before(dst.Time)) {
		dst.Time = row.Time
	}
	for i := range columns {
		c := &columns[i]
		if c.i == nil {
			continue
		}
		switch c.name {
		case "faults", "policy_version":
			*c.i(dst) = max(*c.i(dst), *c.i(row))
		default:
			*c.i(dst) += *c.i(row)
		}
	}
}

// mergeTallies adds the parts' per-key counts. A key in two parts cannot happen with disjoint
// tenants; if it does (a hand-edited input) its counts still add.
func mergeTallies(runs []*partRun) []KeyTally {
	idx := map[string]int{}
	var out []KeyTally
	for _, r := range runs {
		for _, k := range r.keys {
			i, ok := idx[k.Key]
			if !ok {
				idx[k.Key] = len(out)
				out = append(out, k)
				continue
			}
			out[i].Completed += k.Completed
			out[i].Overspend += k.Overspend
			out[i].OverspendTokens += k.OverspendTokens
		}
	}
	return out
}

// mergedStart is the merged run's start: the earliest part's, as the merged summary's
// started_at is. Parts that wrote latency-seconds.hdr instead of latency.hlog did not record
// the load's start; with only those, it is the summary's started_at, which precedes the load
// by the run's set-up.
func mergedStart(runs []*partRun, sum *Summary) time.Time {
	start, _ := partStarts(runs)
	if start.IsZero() {
		return sum.StartedAt
	}
	return start
}

// writeMergedSeries writes the merged timeseries.csv and latency.hlog into out: each row with
// its second's merged histogram, then the totals.
func writeMergedSeries(out string, start time.Time, rows []Interval, seconds map[int]*Histogram, total RequestCounts) error {
	sw, err := CreateSeries(out)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	err = sw.Start(start)
	var empty *Histogram // shared by every second no part has a histogram for: Write leaves h as it was
	for _, r := range rows {
		if err != nil {
			break
		}
		h := seconds[int(r.TS)]
		if h == nil {
			if empty == nil {
				empty = NewHistogram()
			}
			h = empty
		}
		err = sw.Write(r, h)
	}
	if err == nil {
		err = sw.End(total)
	}
	if err = errors.Join(err, sw.Close()); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

// DefaultMergeDir is where `ratelab merge` writes without --out: out/<scenario>-merged-<time>.
func DefaultMergeDir(scenario string, now time.Time) string {
	return filepath.Join("out", scenario+"-merged-"+now.Format("20060102-150405"))
}
