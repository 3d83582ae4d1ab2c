package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/results"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// generateFixture builds the fixture in a temp dir, runs Generate and returns the dir.
func generateFixture(t *testing.T, f fixture) string {
	t.Helper()
	dir := t.TempDir()
	f.write(t, dir)
	if err := Generate(dir); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return dir
}

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGenerate runs Generate once on a seeded run and checks its outputs: the reports against
// golden files, every chart file, and that report.html is self-contained.
func TestGenerate(t *testing.T) {
	t.Parallel()
	dir := generateFixture(t, fixture{seed: 1, rows: 20, limited: true, faults: twoFaults})
	t.Run("golden", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{MarkdownFile, HTMLFile} {
			have := read(t, dir, name)
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, have, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update creates it)", err)
			}
			if !bytes.Equal(have, want) {
				t.Errorf("%s differs from %s (go test -update rewrites it; diff them before committing)", name, golden)
			}
		}
	})
	t.Run("charts", func(t *testing.T) {
		t.Parallel()
		checkCharts(t, dir)
	})
	t.Run("self-contained", func(t *testing.T) {
		t.Parallel()
		checkSelfContained(t, string(read(t, dir, HTMLFile)))
	})
}

// checkCharts checks every chart file: the SVG is well-formed XML naming its series and, on the
// per-second charts, the faults of twoFaults; the PNG decodes at the chart size.
func checkCharts(t *testing.T, dir string) {
	faults := []string{"kill-primary", "script-flush", seriesFault, seriesRecovery}
	tests := []struct {
		name   string
		series []string
		absent []string
	}{
		{LatencyChart, append([]string{seriesP50, seriesP99, seriesP999, seriesDroppedShare, "latency (ms)", "dropped %", "time since start (s)"}, faults...), nil},
		{ThroughputChart, append([]string{seriesOffered, seriesSent, seriesAllowed, seriesDenied, seriesDropped, "requests/s"}, faults...), nil},
		{RedirectsChart, append([]string{seriesMoved, seriesAsk, seriesTryAgain, seriesClusterDown, seriesNoScript,
			seriesTimeout, seriesConn, "count/s", "stacked"}, faults...), []string{seriesOther}},
		// A v2 bound is per key, on the burst excess: not drawn against the cumulative count.
		{OverspendChart, append([]string{seriesOverspend, "overspend (requests)"}, faults...), []string{seriesBound, "bound 40"}},
		{HDRChart, []string{seriesLatency, "99.9%", "percentile"}, faults},
		{NodesChart, []string{seriesNodeShare, seriesEvenShare, "7001", "(hottest key)",
			"7006", "node (port on 127.0.0.1)", "share of ops (%)", "% of Redis ops"}, faults},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svg := read(t, dir, tt.name+".svg")
			text := svgText(t, svg)
			for _, s := range tt.series {
				if !strings.Contains(text, s) {
					t.Errorf("%s.svg has no text %q; its text is %q", tt.name, s, text)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(text, s) {
					t.Errorf("%s.svg has text %q; its text is %q", tt.name, s, text)
				}
			}
			img, err := png.Decode(bytes.NewReader(read(t, dir, tt.name+".png")))
			if err != nil {
				t.Fatalf("%s.png: %v", tt.name, err)
			}
			if b := img.Bounds(); b.Dx() != ChartWidthPx || b.Dy() != ChartHeightPx {
				t.Errorf("%s.png is %dx%d, want %dx%d", tt.name, b.Dx(), b.Dy(), ChartWidthPx, ChartHeightPx)
			}
		})
	}
}

// checkSelfContained checks that report.html needs nothing but itself: no external references or
// script files (one inline script, the self-check the browser test reads), every chart inline,
// and user text escaped.
func checkSelfContained(t *testing.T, html string) {
	// The SVG namespace URIs are identifiers, not fetches.
	h := strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, "")
	h = strings.ReplaceAll(h, `xmlns:xlink="http://www.w3.org/1999/xlink"`, "")
	if n := strings.Count(h, "<script"); n != 1 || strings.Contains(h, "<script src") {
		t.Errorf("report.html has %d scripts, want only the inline self-check", n)
	}
	for _, bad := range []string{"<script src", "http://", "https://", "<link", "<img", "<?xml", "@import"} {
		if strings.Contains(h, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	if n := strings.Count(html, "<svg "); n != 6 {
		t.Errorf("report.html inlines %d SVGs, want 6", n)
	}
	for _, want := range []string{"name: hot-tenant &lt;demo&gt;", "<title>ratelab report: hot-tenant &lt;demo&gt;</title>",
		`SLO verdict: <span class="fail">FAIL</span>`, "<code>rl:{t1}:search|v2</code>", "<strong>Offered rate not reached.</strong>",
		"<h2>Faults</h2>", "<td>unknown outcomes (client timeouts)</td><td class=\"num\" colspan=\"2\">7</td>",
		`<tr><td>p99</td><td class="num">not measurable</td>`, "not measurable above p9",
		`<td class="num fail" colspan="2">no</td>`, "40 tokens (leases 30 &#43; replication gap 10)",
		`<td class="num">8</td><td>kill-primary</td><td>127.0.0.1:7001</td><td class="num">9.1</td><td class="num">10.4</td>` +
			`<td>detected after 1.1 s, recovered 2.4 s after injection; in 8–11 s: 102 failed decisions, `,
		`<td class="num">8.6</td><td>script-flush</td><td>127.0.0.1:7002</td><td class="num">8.7</td><td class="num">—</td>` +
			`<td>detected after 0.1 s, no recovery seen before the run ended; in 8–20 s: `} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// svgText parses svg as XML (failing the test when it is not well-formed) and returns its
// character data, where the titles, labels and legend entries live.
func svgText(t *testing.T, svg []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	var text strings.Builder
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
			text.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return text.String()
}

// TestGenerateEdgeCases runs Generate on degenerate runs: none may fail or panic, and each
// report must say what is missing. Charts are drawn as SVG only: plot.Draw, where a log axis
// panics on values <= 0, is the same for every format, and PNG rasterizing is slow under -race.
func TestGenerateEdgeCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		have      fixture
		remove    string   // a file to delete before Generate
		want      []string // in report.md
		wantHTML  []string // in report.html
		notHTML   []string // not in report.html
		wantFiles []string
		noFiles   []string
		svgText   map[string][]string // chart name -> text its SVG must have
		svgLacks  map[string][]string // chart name -> text its SVG must not have
	}{
		{name: "empty run", have: fixture{seed: 3, rows: 0},
			want:      []string{"**No data:**", "No data: no per-second rows to chart."},
			wantHTML:  []string{"No data", "Latency per second (ms, log scale) (no data)"},
			wantFiles: []string{"latency.svg", "throughput.svg", "redirects.svg", "overspend.svg", "latency_hdr.svg"}},
		{name: "single row", have: fixture{seed: 4, rows: 1},
			notHTML:   []string{"Generator-limited", "No data"},
			wantFiles: []string{"latency.svg", "throughput.svg", "overspend.svg", "latency_hdr.svg"}},
		{name: "all zeros", have: fixture{seed: 5, rows: 10, zeros: true},
			wantHTML: []string{"Latency per second (ms, log scale) (no data)", "Latency by percentile (ms) (no data)",
				"Redirects and errors (stacked, per second) (none)"}},
		{name: "truncated timeseries", have: fixture{seed: 6, rows: 10, truncate: 5},
			want: []string{"timeseries.csv: timeseries line 11 column ", "no end of line", "the report shows the 9 rows"}},
		{name: "missing timeseries", have: fixture{seed: 7, rows: 5}, remove: results.TimeseriesFile,
			want: []string{"timeseries.csv: missing", "**No data:**"}},
		{name: "no histogram, no scenario", have: fixture{seed: 8, rows: 5, noHist: true, noYAML: true},
			wantHTML: []string{"No scenario.yaml in the run directory."}, noFiles: []string{"latency_hdr.svg"}},
		{name: "fault at t=0 and beyond the last row", have: fixture{seed: 10, rows: 5, faults: []results.Fault{
			{AtS: 0, Kind: "pause", Target: "127.0.0.1:7001", RecoveredS: 1.5},
			{AtS: 60, Kind: "restart", Target: "127.0.0.1:7003", DetectedS: 61}}},
			want: []string{"| 0 | pause | 127.0.0.1:7001 | — | 1.5 | recovered 1.5 s after injection; in 0–2 s: ",
				"| 60 | restart | 127.0.0.1:7003 | 61 | — | injected outside the recorded 0–5 s, so not on the charts; " +
					"detected after 1 s, no recovery seen before the run ended |",
				"Faults (x in s): pause at 0, recovered at 1.5; restart at 60, no recovery seen (outside the chart)."},
			svgText: map[string][]string{LatencyChart: {"pause", seriesRecovery}, ThroughputChart: {"pause"},
				RedirectsChart: {"pause"}, OverspendChart: {"pause"}},
			svgLacks: map[string][]string{LatencyChart: {"restart"}, ThroughputChart: {"restart"},
				RedirectsChart: {"restart"}, OverspendChart: {"restart"}}},
		{name: "faults in an empty run", have: fixture{seed: 12, rows: 0, faults: twoFaults},
			want:     []string{"| 8 | kill-primary |", "| 8.6 | script-flush |", "**No data:**"},
			svgLacks: map[string][]string{LatencyChart: {"kill-primary", seriesFault}, RedirectsChart: {"script-flush"}}},
		{name: "v1 summary", have: fixture{seed: 13, rows: 5, v1: true},
			want: []string{"**Old definitions.** summary v1: latency over answered requests only, overspend without ranges (old definitions)",
				"| latency p50 / p90 / p99 / p99.9 / max (answered requests, v1) |", "| central ops (v1: every command) |"},
			wantHTML: []string{"<strong>Old definitions.</strong>", "Latency (ms, answered requests, v1)", "v1 bound (whole run)"},
			notHTML:  []string{"not measurable", "burst excess"},
			svgText:  map[string][]string{OverspendChart: {seriesBound, "bound 40 tokens"}}},
		{name: "failed fault", have: fixture{seed: 14, rows: 5, faults: []results.Fault{
			{AtS: 2, Kind: "pause", Target: "127.0.0.1:7001", ForS: 1, Failed: true, Error: "SIGSTOP: no such process"}}},
			want: []string{"> **1 fault(s) FAILED:** the run did not test what its scenario asked",
				"| 2 | pause | 127.0.0.1:7001 | — | — | FAILED, not carried out: SIGSTOP: no such process; "},
			wantHTML: []string{`<td class="fail">pause</td>`, "FAILED, not carried out: SIGSTOP: no such process"}},
		{name: "nothing dropped", have: fixture{seed: 15, rows: 0},
			notHTML: []string{"not measurable above"}},
		{name: "where the cores went", have: fixture{seed: 16, rows: 3, cpu: &results.CPU{WallS: 3, Cores: 2, Generator: 0.7, MachineBusy: 1.9, Other: 0.1,
			Nodes: []results.NodeCPU{{Addr: "127.0.0.1:7001", Role: "primary", MainThread: 0.9, Process: 1.1}}}},
			want:     []string{"| where the cores went | generator 0.70 cores, primaries' main threads 0.90, replicas 0.00, other 0.10; machine 1.90 of 2 cores busy (over 3.0 s of load) |"},
			wantHTML: []string{"<td>where the cores went</td>"}},
		{name: "corrupt histogram", have: fixture{seed: 9, rows: 5}, remove: "corrupt:" + results.HistogramFile,
			want: []string{"latency.hdr.json: read histogram: not a JSON object"}, noFiles: []string{"latency_hdr.svg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tt.have.write(t, dir)
			if name, ok := strings.CutPrefix(tt.remove, "corrupt:"); ok {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("{"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if tt.remove != "" {
				if err := os.Remove(filepath.Join(dir, tt.remove)); err != nil {
					t.Fatal(err)
				}
			}
			if err := generate(dir, []string{"svg"}); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			md, html := string(read(t, dir, MarkdownFile)), string(read(t, dir, HTMLFile))
			for _, w := range tt.want {
				if !strings.Contains(md, w) {
					t.Errorf("report.md lacks %q:\n%s", w, md)
				}
			}
			for _, w := range tt.wantHTML {
				if !strings.Contains(html, w) {
					t.Errorf("report.html lacks %q", w)
				}
			}
			for _, w := range tt.notHTML {
				if strings.Contains(html, w) {
					t.Errorf("report.html contains %q", w)
				}
			}
			for _, f := range tt.wantFiles {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("missing output: %v", err)
				}
			}
			for chart, texts := range tt.svgText {
				text := svgText(t, read(t, dir, chart+".svg"))
				for _, w := range texts {
					if !strings.Contains(text, w) {
						t.Errorf("%s.svg has no text %q", chart, w)
					}
				}
			}
			for chart, texts := range tt.svgLacks {
				text := svgText(t, read(t, dir, chart+".svg"))
				for _, w := range texts {
					if strings.Contains(text, w) {
						t.Errorf("%s.svg has text %q", chart, w)
					}
				}
			}
			for _, f := range tt.noFiles {
				if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s exists, want none", f)
				}
			}
		})
	}
}

func TestGenerateNeedsSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(dir string) error
		want  error
	}{
		{"no summary", func(string) error { return nil }, fs.ErrNotExist},
		{"wrong schema", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, results.SummaryFile), []byte(`{"schema":"x/v9"}`), 0o644)
		}, results.ErrSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := tt.setup(dir); err != nil {
				t.Fatal(err)
			}
			if err := Generate(dir); !errors.Is(err, tt.want) {
				t.Errorf("Generate = %v, want %v", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, HTMLFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a report was written without a summary")
			}
		})
	}
}

// BenchmarkGenerate measures a full report of a 10-minute run (600 rows, 5 charts as PNG and SVG,
// two faults marked).
func BenchmarkGenerate(b *testing.B) {
	dir := b.TempDir()
	fixture{seed: 11, rows: 600, faults: twoFaults}.write(b, dir)
	b.ReportAllocs()
	for b.Loop() {
		if err := Generate(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
}
