package gate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// One gate end to end on real clusters, kept short: a binary built from this tree runs as both
// sides, two 1-second runs each, alternated, with 2 ms injected each way into the head's runs
// only; then the head against the base's runs as if they were a committed baseline. Two runs
// per side give no verdict (the fault tier's make perf-check tests judge); this checks where
// the runs go, that the delay lands on the head alone, and what each mode's output says.
func TestRunEndToEnd(t *testing.T) {
	ctx := context.Background()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ratelab")
	if err := goBuild(ctx, Options{Go: "go"}, repo, bin, "test"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "builds")
	res, err := Run(ctx, Options{Repo: repo, Base: "HEAD", BaseBinary: bin, HeadBinary: bin, Out: out, Repeat: 2, Warmup: -1,
		HeadDelay: 2 * time.Millisecond, RunArgs: []string{"--duration", "1s"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Order, order(Builds, 2)) || !res.Report.NoVerdict || len(res.Report.Base.Runs) != 2 || len(res.Report.New.Runs) != 2 {
		t.Errorf("order %v, no verdict %v, %d+%d runs; want %v, true, 2+2", res.Order, res.Report.NoVerdict,
			len(res.Report.Base.Runs), len(res.Report.New.Runs), order(Builds, 2))
	}
	for _, side := range []string{SideBase, SideHead} {
		for _, f := range []string{"rep-01/summary.json", "rep-02/report.md", "rep-02.log"} {
			if _, err := os.Stat(filepath.Join(out, side, f)); err != nil {
				t.Errorf("%s: %v", side, err)
			}
		}
	}
	for _, row := range res.Report.Rows {
		// 2 ms each way through every primary's proxy is at least 4 ms more per decision.
		if row.Metric.Name == "p50_ms" && !(row.NewMedian > row.BaseMedian+3) {
			t.Errorf("p50 base %.3f ms, head %.3f ms: want the head's 2 ms each way on top, and the base without it", row.BaseMedian, row.NewMedian)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, CompareFile))
	if err != nil || !strings.Contains(string(md), "perf-check compares builds") {
		t.Errorf("%s: %v\n%s\nwant the builds headline", CompareFile, err, md)
	}

	days, err := Run(ctx, Options{Repo: repo, Against: filepath.Join(out, SideBase), HeadBinary: bin, Out: filepath.Join(t.TempDir(), "days"),
		Repeat: 2, Warmup: -1, RunArgs: []string{"--duration", "1s"}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := days.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if days.Mode != Days || !strings.Contains(text.String(), "compares DAYS, not builds") || len(days.Report.Rows) <= len(Metrics) {
		t.Errorf("against the base's runs: mode %s, %d rows:\n%s\nwant days, every metric of compare, and the days headline", days.Mode, len(days.Report.Rows), text.String())
	}
}
