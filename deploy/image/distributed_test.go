//go:build faults

package image

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/results"
)

// TestImageDistributedRun runs the Jobs that `ratelab kubernetes` prints, in containers of the
// image, as their pods would run them: the image itself generates the Jobs (three parts of a
// light load against a cluster on the host's loopback, one --start-at a few seconds ahead),
// then the merge Job's args start first, waiting for the parts (--wait), and the parts Job's
// args run for every index of its completions. The merged run must give what one process
// running the whole schedule gives: offered requests second by second, decisions key by key and
// the latency histogram's count. The load is light, so no generator drops a request.
func TestImageDistributedRun(t *testing.T) {
	image := buildImage(t)
	l := clustertest.Start(t, cluster.Options{Primaries: 3, Replicas: 0})
	dir := t.TempDir()
	vol := []string{"-v", dir + ":/results"}
	// Containers start and set up within the margin; the parts then start as one.
	atTime := time.Now().Add(10 * time.Second).Truncate(time.Millisecond)
	at := atTime.UTC().Format(time.RFC3339Nano)
	stream := dockerRun(t, image, nil, "kubernetes", "--parts", "3", "--run", "run", "--start-at", at, "--secret", "",
		"--", "smoke", "--cluster", "redis://"+l.Addrs()[0], "--rate", "600", "--duration", "3s")
	jobs := readJobs(t, []byte(stream))
	parts, merge := jobs["run-parts"], jobs["run-merge"]
	n := parts.Spec.Completions
	if n != 3 || len(merge.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want Jobs run-parts (3 completions) and run-merge, have %v:\n%s", slices.Sorted(maps.Keys(jobs)), stream)
	}
	partArgs, mergeArgs := parts.Spec.Template.Spec.Containers[0].Args, merge.Spec.Template.Spec.Containers[0].Args

	mergeRun := start("merge", dockerCmd(image, vol, podArgs(t, mergeArgs, nil, nil)...))
	var runs []*bgRun
	for k := range n {
		vars := map[string]string{"PART_INDEX": strconv.Itoa(k)}
		runs = append(runs, start(fmt.Sprintf("part %d/%d", k, n), dockerCmd(image, vol, podArgs(t, partArgs, vars, nil)...)))
	}
	wholeSet := map[string]string{"--out": "/results/whole"}
	runs = append(runs, start("whole run", dockerCmd(image, vol, podArgs(t, partArgs, map[string]string{"PART_INDEX": "0"}, wholeSet, "--part")...)))
	for _, r := range append(runs, mergeRun) {
		if err := <-r.err; err != nil {
			t.Fatalf("%s: %v\n%s", r.name, err, r.out.String())
		}
	}
	t.Logf("merge:\n%s", mergeRun.out.String())
	if !strings.Contains(mergeRun.out.String(), "waiting up to") {
		t.Errorf("the merge, started before the parts, did not wait for them:\n%s", mergeRun.out.String())
	}

	whole, merged := readRun(t, filepath.Join(dir, "whole")), readRun(t, filepath.Join(dir, "run", "merged"))
	for k := range n {
		sum, err := results.ReadSummary(filepath.Join(dir, "run", fmt.Sprintf("part-%d", k), results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if !sum.StartedAt.Equal(atTime) {
			t.Errorf("part %d started at %s, want --start-at %s", k, sum.StartedAt, at)
		}
	}
	if whole.sum.Load.Dropped != 0 || merged.sum.Load.Dropped != 0 {
		t.Fatalf("dropped: whole %d, merged %d; the comparison needs a load no generator drops", whole.sum.Load.Dropped, merged.sum.Load.Dropped)
	}
	if merged.sum.Part == nil || len(merged.sum.Part.Merged) != n || strings.Contains(merged.sum.Load.Note, "WARNING") {
		t.Errorf("merged part %+v, note %q: want %d parts merged and no warning (one start)", merged.sum.Part, merged.sum.Load.Note, n)
	}
	if len(whole.rows) != len(merged.rows) {
		t.Fatalf("rows: whole %d, merged %d", len(whole.rows), len(merged.rows))
	}
	var offered []int64
	for i := range whole.rows {
		if w, m := whole.rows[i].Offered, merged.rows[i].Offered; w != m {
			t.Errorf("second %d: offered whole %d, merged %d", i, w, m)
		}
		offered = append(offered, whole.rows[i].Offered)
	}
	if len(whole.keys) != len(merged.keys) {
		t.Errorf("keys.csv: whole %d keys, merged %d", len(whole.keys), len(merged.keys))
	}
	for k, w := range whole.keys {
		if m := merged.keys[k]; m != w {
			t.Errorf("key %s: decisions whole %d, merged %d", k, w, m)
		}
	}
	// The histograms hold the decided requests: each run's completed less its errors (a busy
	// machine's timeouts differ between the two runs), and both runs completed every request.
	for _, r := range []struct {
		name string
		sum  *results.Summary
		n    int64
	}{{"whole", whole.sum, whole.hist.Count()}, {"merged", merged.sum, merged.hist.Count()}} {
		if want := r.sum.Load.Completed - r.sum.Outcomes.Errors; r.n != want {
			t.Errorf("latency histogram count: %s %d; want its %d completed less %d errors", r.name, r.n, r.sum.Load.Completed, r.sum.Outcomes.Errors)
		}
	}
	if w, m := whole.sum.Load.Completed, merged.sum.Load.Completed; w != m {
		t.Errorf("completed: whole %d, merged %d; want the same schedule's", w, m)
	}
	t.Logf("whole and merged: offered %v by second (%d in all), %d decisions over %d keys, histogram count %d",
		offered, whole.sum.Load.Offered, whole.sum.Load.Completed, len(whole.keys), merged.hist.Count())
}

// bgRun is a container run in the background: its error arrives on err, then its output is in out.
type bgRun struct {
	name string
	err  chan error
	out  strings.Builder
}

func start(name string, c *exec.Cmd) *bgRun {
	r := &bgRun{name: name, err: make(chan error, 1)}
	go func() {
		b, err := c.CombinedOutput()
		r.out.Write(b)
		r.err <- err
	}()
	return r
}

// runFiles is what the comparison reads of a run directory.
type runFiles struct {
	sum  *results.Summary
	rows []results.Interval
	keys map[string]int64 // decisions by key (keys.csv)
	hist *results.Histogram
}

func readRun(t *testing.T, dir string) runFiles {
	t.Helper()
	var r runFiles
	var err error
	if r.sum, err = results.ReadSummary(filepath.Join(dir, results.SummaryFile)); err != nil {
		t.Fatal(err)
	}
	read := func(name string, f func(*os.File) error) {
		fh, err := os.Open(filepath.Join(dir, name))
		if err == nil {
			err = f(fh)
			fh.Close()
		}
		if err != nil {
			t.Fatalf("%s: %v", filepath.Join(dir, name), err)
		}
	}
	read(results.TimeseriesFile, func(f *os.File) (err error) { r.rows, err = results.ReadTimeseries(f); return err })
	read(results.HistogramFile, func(f *os.File) (err error) { r.hist, err = results.ReadHistogram(f); return err })
	read(results.TallyFile, func(f *os.File) error {
		keys, err := results.ReadTally(f)
		r.keys = map[string]int64{}
		for _, k := range keys {
			r.keys[k.Key] += k.Completed
		}
		return err
	})
	return r
}
