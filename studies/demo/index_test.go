package demo

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ratelab/report"
	"ratelab/results"
)

// fakeSummary is a summary with the fields the story's facts read.
func fakeSummary(tokens int64, ratio float64) *results.Summary {
	return &results.Summary{
		Load:      results.Load{OfferedRPS: 5000, AchievedRPS: 4321},
		LatencyMs: results.Latency{P99: 1.25},
		Overspend: results.Overspend{Tokens: tokens, Ratio: ratio, Bound: results.Bound{Tokens: 777}, FalseDenies: 31, FalseDenyRatio: 0.0042},
		Outcomes:  results.Outcomes{FailedOpen: 111, FailedClosed: 222},
		Central:   results.Central{OpsPerS: 400},
		HotKeys:   []results.HotKey{{Key: "rl:{t1}:read", Share: 0.2, Node: "127.0.0.1:7001"}},
		Nodes:     []results.NodeStats{{Addr: "127.0.0.1:7001", Share: 0.61}},
	}
}

// TestWriteIndexFakeSummaries feeds every step's facts with fake summaries and checks that the
// page carries the narration and the numbers, and that every link is relative and resolves.
func TestWriteIndexFakeSummaries(t *testing.T) {
	dir := t.TempDir()
	var steps []Step
	for i, sp := range plan() {
		st := Step{Title: sp.title, Narration: sp.narration, Plots: sp.plots}
		for j, rp := range sp.runs {
			runDir := filepath.Join(dir, rp.dir)
			if err := os.MkdirAll(runDir, 0o755); err != nil {
				t.Fatal(err)
			}
			// Only some charts exist: the index must link only those.
			for _, f := range []string{"report.html", "summary.json", report.ThroughputChart + ".svg", report.NodesChart + ".svg"} {
				if err := os.WriteFile(filepath.Join(runDir, f), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st.Runs = append(st.Runs, StepRun{Label: rp.label, Dir: rp.dir, Summary: fakeSummary(int64(1000*(i+1)+j), 0.1)})
		}
		st.Facts = sp.facts(st.Runs)
		steps = append(steps, st)
	}
	if err := WriteIndex(dir, steps); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, want := range []string{
		"1000 tokens (ratio 0.1)", // step 1, fixed window
		"1001 tokens (ratio 0.1)", // step 1, token bucket
		"5000 / 4321 req/s", "1.250 ms", "rl:{t1}:read (20.0% of decisions)", "61.0%",
		"111 / ", "222 / ", "31 (0.0042)",
		"400 vs 400 (1.0x fewer)", "4000 tokens in all; burst excess", "false denies: lease vs central", "p99 latency: lease vs central",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	for _, sp := range plan() {
		if !strings.Contains(page, htmlEscape(sp.narration[0])) {
			t.Errorf("index lacks the narration of %q", sp.title)
		}
	}
	links := regexp.MustCompile(`(?:href|src)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(links) < 3*7 {
		t.Fatalf("index has %d links, want report, summary and one plot per run (7 runs)", len(links))
	}
	for _, l := range links {
		u := l[1]
		if strings.Contains(u, "://") || strings.HasPrefix(u, "/") {
			t.Errorf("link %q is not relative", u)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(u))); err != nil {
			t.Errorf("link %q does not resolve: %v", u, err)
		}
	}
	if strings.Contains(page, report.LatencyChart+".svg") {
		t.Error("index links latency.svg, which does not exist")
	}
	// The load-share chart is the hot-tenant step's point; the other steps do not show it.
	if n := strings.Count(page, report.NodesChart+".svg"); n != 3 {
		t.Errorf("index links nodes.svg %d times, want 3 (link, image, alt) for the hot-tenant step only", n)
	}
}

// TestWriteIndexEmpty is the index of a demo interrupted before its first step finished.
func TestWriteIndexEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	if err := WriteIndex(dir, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "No step finished") {
		t.Errorf("empty index does not say that no step finished:\n%s", data)
	}
}

// htmlEscape is how html/template writes narration text (quotes become entities).
func htmlEscape(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
