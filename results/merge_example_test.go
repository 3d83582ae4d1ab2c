package results_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ratelab/results"
)

// writePart lays out the run directory part i of 2 leaves: summary, whole-run and per-second
// histograms (latency.hlog beside timeseries.csv, through a SeriesWriter) and per-key tally
// (here one second with one latency per decision).
func writePart(dir string, i int, lat []time.Duration, keys []results.KeyTally) {
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, results.ScenarioFile), []byte("name: hot-tenant\n"), 0o644)
	h := results.NewHistogram()
	for _, d := range lat {
		h.Record(d)
	}
	n := int64(len(lat))
	sw, _ := results.CreateSeries(dir)
	sw.Start(time.Date(2025, 6, 1, 12, 0, 2, 0, time.UTC))
	sw.Write(results.Interval{Offered: n, Sent: n, Allowed: n}, h)
	sw.End(results.RequestCounts{Offered: n, Served: n})
	sw.Close()
	lf, _ := os.Create(filepath.Join(dir, results.TallyFile))
	results.WriteTally(lf, keys)
	lf.Close()
	sum := results.NewSummary("hot-tenant", 1, time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	sum.Part = &results.Part{Index: i, Count: 2}
	sum.DurationS = 1
	sum.Load = results.Load{OfferedRPS: float64(n), AchievedRPS: float64(n), Completed: n, Sent: n}
	sum.Outcomes.Allowed = n
	results.WriteRunFiles(dir, sum, h)
}

// Two generators each ran half of the tenants; the merge reads like one run of all of them.
func ExampleMerge() {
	root, _ := os.MkdirTemp("", "merge-example-")
	defer os.RemoveAll(root)
	ms := func(xs ...int) (out []time.Duration) {
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	writePart(filepath.Join(root, "part-0"), 0, ms(1, 1, 2, 2, 3, 9),
		[]results.KeyTally{{Key: "rl:{tenant-0}:read", Completed: 6}})
	writePart(filepath.Join(root, "part-1"), 1, ms(1, 2, 40, 50),
		[]results.KeyTally{{Key: "rl:{tenant-1}:read", Completed: 4}})

	sum, err := results.Merge(filepath.Join(root, "merged"),
		[]string{filepath.Join(root, "part-0"), filepath.Join(root, "part-1")})
	if err != nil {
		panic(err)
	}
	fmt.Printf("parts %v of %d: %d decisions at %.0f/s\n", sum.Part.Merged, sum.Part.Count, sum.Load.Completed, sum.Load.AchievedRPS)
	fmt.Printf("p50 %.0f ms, p90 %.0f ms (from the merged histogram)\n", sum.LatencyMs.P50, sum.LatencyMs.P90)
	fmt.Printf("hottest %s with %.0f%% of decisions\n", sum.HotKeys[0].Key, 100*sum.HotKeys[0].Share)
	// Output:
	// parts [0 1] of 2: 10 decisions at 10/s
	// p50 2 ms, p90 40 ms (from the merged histogram)
	// hottest rl:{tenant-0}:read with 60% of decisions
}
