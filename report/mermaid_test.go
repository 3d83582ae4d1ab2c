package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// xyChart is one parsed Mermaid block of report.md.
type xyChart struct {
	title, xLabel, yLabel string
	x0, x1, top           float64
	lines                 [][]float64
}

// The grammar report.md emits (see mermaid.go). num is Mermaid's own NUMBER_WITH_DECIMAL
// token; text is what mermaidText keeps inside the quotes.
const (
	mmdNum  = `[+-]?(?:\d+(?:\.\d+)?|\.\d+)`
	mmdText = `"([A-Za-z0-9 ()/,.:+\-_=]*)"`
)

var (
	mmdTitle = regexp.MustCompile(`^    title ` + mmdText + `$`)
	mmdAxis  = regexp.MustCompile(`^    ([xy])-axis ` + mmdText + ` (` + mmdNum + `) --> (` + mmdNum + `)$`)
	mmdLine  = regexp.MustCompile(`^    line \[(` + mmdNum + `(?:, ` + mmdNum + `)*)\]$`)
	// mdImage is any Markdown image: report.md has none (a CI job summary cannot show them).
	mdImage = regexp.MustCompile(`!\[[^\]]*\]\(`)
)

// mermaidBlocks returns the bodies of the ```mermaid blocks of md.
func mermaidBlocks(t *testing.T, md string) []string {
	t.Helper()
	var blocks []string
	rest := md
	for {
		_, after, ok := strings.Cut(rest, "```mermaid\n")
		if !ok {
			return blocks
		}
		body, tail, ok := strings.Cut(after, "\n```\n")
		if !ok {
			t.Fatalf("unterminated mermaid block: %q", after)
		}
		blocks, rest = append(blocks, body), tail
	}
}

// parseXYChart parses one block, failing the test unless it follows the grammar: the header,
// title, numeric x axis, y axis from 0, and one or more lines of the same length, at least 2.
func parseXYChart(t *testing.T, block string) xyChart {
	t.Helper()
	lines := strings.Split(block, "\n")
	if len(lines) < 5 || lines[0] != "xychart-beta" {
		t.Fatalf("block is not an xychart-beta with title, axes and a line:\n%s", block)
	}
	var c xyChart
	m := mmdTitle.FindStringSubmatch(lines[1])
	if m == nil {
		t.Fatalf("bad title line %q", lines[1])
	}
	c.title = m[1]
	for i, want := range []string{"x", "y"} {
		m := mmdAxis.FindStringSubmatch(lines[2+i])
		if m == nil || m[1] != want {
			t.Fatalf("bad %s-axis line %q", want, lines[2+i])
		}
		lo, hi := parseNum(t, m[3]), parseNum(t, m[4])
		if hi < lo {
			t.Errorf("%s-axis %q: range %g --> %g runs backwards", want, m[2], lo, hi)
		}
		if want == "x" {
			c.xLabel, c.x0, c.x1 = m[2], lo, hi
		} else {
			c.yLabel, c.top = m[2], hi
			if lo != 0 || hi <= 0 {
				t.Errorf("y-axis %q: range %g --> %g, want 0 --> a positive top", m[2], lo, hi)
			}
		}
	}
	for _, l := range lines[4:] {
		m := mmdLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("bad line statement %q", l)
		}
		var vals []float64
		for f := range strings.SplitSeq(m[1], ", ") {
			v := parseNum(t, f)
			if v > c.top {
				t.Errorf("%q: value %g above the y axis top %g", c.title, v, c.top)
			}
			vals = append(vals, v)
		}
		c.lines = append(c.lines, vals)
	}
	for _, l := range c.lines {
		if len(l) != len(c.lines[0]) || len(l) < 2 {
			t.Errorf("%q: lines of %d and %d values; want the same number, at least 2", c.title, len(l), len(c.lines[0]))
		}
	}
	return c
}

func parseNum(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		t.Fatalf("number %q: %v", s, err)
	}
	return v
}

// width is the seconds per point: xychart spreads n values evenly over the x range, so value
// k sits at x0 + k*width, which must be a whole number of seconds.
func (c xyChart) width(t *testing.T) float64 {
	t.Helper()
	n := len(c.lines[0])
	w := (c.x1 - c.x0) / float64(n-1)
	if w < 1 || w != math.Trunc(w) {
		t.Fatalf("%q: x range %g --> %g over %d values is %g s per point; want a whole number >= 1", c.title, c.x0, c.x1, n, w)
	}
	return w
}

// wantLines recomputes a chart's lines from the rows, by its title, with the aggregation the
// title states, independently of mermaid.go: point k holds the rows with x0 + k*w <= TS <
// x0 + (k+1)*w.
func wantLines(t *testing.T, c xyChart, rows []results.Interval) [][]float64 {
	t.Helper()
	w := c.width(t)
	n := len(c.lines[0])
	per := "per second"
	if w > 1 {
		per = " per " + strconv.FormatFloat(w, 'f', -1, 64) + " s"
	}
	if !strings.Contains(c.title, per) && !strings.HasPrefix(c.title, "Cumulative") {
		t.Errorf("title %q does not say the points are %q", c.title, per)
	}
	agg := func(get func(results.Interval) float64, how string) []float64 {
		out, cnt := make([]float64, n), make([]int, n)
		var sum float64
		for _, r := range rows {
			k := int((r.TS - c.x0) / w)
			if k < 0 || k >= n {
				t.Fatalf("%q: row at %g s is off the x axis %g --> %g", c.title, r.TS, c.x0, c.x1)
			}
			switch how {
			case "mean":
				out[k] += get(r)
			case "max":
				out[k] = math.Max(out[k], get(r))
			case "cumulative":
				sum += get(r)
				out[k] = sum
			}
			cnt[k]++
		}
		for k := range out {
			if how == "mean" && cnt[k] > 0 {
				out[k] /= float64(cnt[k])
			}
		}
		return out
	}
	offered := func(r results.Interval) float64 { return float64(r.Offered) }
	achieved := func(r results.Interval) float64 {
		return float64(r.Allowed + r.Denied + r.FailedOpen + r.FailedClosed - r.Late)
	}
	redirects := func(r results.Interval) float64 { return float64(r.Moved + r.Ask) }
	ask := func(r results.Interval) float64 { return float64(r.Ask) }
	switch {
	case strings.HasPrefix(c.title, "Offered vs achieved requests/s"):
		return [][]float64{agg(offered, "mean"), agg(achieved, "mean")}
	case strings.HasPrefix(c.title, "p99 latency"):
		return [][]float64{agg(func(r results.Interval) float64 { return r.P99Ms }, "max")}
	case strings.HasPrefix(c.title, "MOVED + ASK redirects/s"):
		return [][]float64{agg(redirects, "mean"), agg(ask, "mean")}
	case strings.HasPrefix(c.title, "MOVED redirects/s"):
		return [][]float64{agg(redirects, "mean")}
	case strings.HasPrefix(c.title, "Cumulative overspend"):
		return [][]float64{agg(func(r results.Interval) float64 { return float64(r.Overspend) }, "cumulative")}
	}
	t.Fatalf("unknown chart %q", c.title)
	return nil
}

// checkMarkdownCharts checks report.md in dir against its timeseries.csv: no image links, every
// Mermaid block in the grammar, its values the rows' after the stated aggregation, and the
// charts' titles in order. It returns the report.
func checkMarkdownCharts(t *testing.T, dir string, titles []string) string {
	t.Helper()
	md := string(read(t, dir, MarkdownFile))
	if img := mdImage.FindString(md); img != "" {
		t.Errorf("report.md has an image link %q: a CI job summary cannot show it", img)
	}
	rows, err := results.ReadTimeseries(bytes.NewReader(read(t, dir, results.TimeseriesFile)))
	if err != nil {
		t.Fatal(err)
	}
	blocks := mermaidBlocks(t, md)
	if len(blocks) != len(titles) {
		t.Fatalf("report.md has %d mermaid blocks, want %d (%q)", len(blocks), len(titles), titles)
	}
	for i, b := range blocks {
		c := parseXYChart(t, b)
		if !strings.HasPrefix(c.title, titles[i]) {
			t.Errorf("chart %d is %q, want %q", i, c.title, titles[i])
		}
		if n := len(c.lines[0]); n > maxMermaidPoints {
			t.Errorf("%q has %d points, want at most %d", c.title, n, maxMermaidPoints)
		}
		want := wantLines(t, c, rows)
		if len(want) != len(c.lines) {
			t.Fatalf("%q has %d lines, want %d", c.title, len(c.lines), len(want))
		}
		for l := range want {
			if len(want[l]) != len(c.lines[l]) {
				t.Fatalf("%q line %d: %d values, want %d", c.title, l, len(c.lines[l]), len(want[l]))
			}
			for k, w := range want[l] {
				if have := c.lines[l][k]; math.Abs(have-w) > 0.0005 {
					t.Errorf("%q line %d point %d: %g, want %g", c.title, l, k, have, w)
				}
			}
		}
	}
	return md
}

var allCharts = []string{"Offered vs achieved requests/s", "p99 latency", "MOVED + ASK redirects/s", "Cumulative overspend"}

// TestMarkdownCharts checks report.md's Mermaid charts on the golden run: twenty seconds, two
// faults, drops that make the whole run's p99 over offered requests not measurable.
func TestMarkdownCharts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := fixture{seed: 1, rows: 20, limited: true, faults: twoFaults}.write(t, dir)
	if s.LatencyMs.P99.Measurable() {
		t.Fatal("the fixture's p99 over offered requests is measurable; this test wants one that is not")
	}
	if err := generate(dir, []string{"svg"}); err != nil {
		t.Fatal(err)
	}
	md := checkMarkdownCharts(t, dir, allCharts)
	for _, want := range []string{"Faults (x in s): kill-primary at 8, recovered at 10.4; script-flush at 8.6, no recovery seen.",
		"Upper line: offered requests/s; lower line: achieved", "`latency.png`, `throughput.png`"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, bad := range []string{"NaN", "Inf", "](latency", "](report.html)"} {
		if strings.Contains(md, bad) {
			t.Errorf("report.md contains %q", bad)
		}
	}
}

// writeRows writes a run of the given rows with a bare summary into dir.
func writeRows(t *testing.T, dir string, rows []results.Interval) {
	t.Helper()
	s := results.NewSummary("rows", 1, time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	s.DurationS = float64(len(rows))
	if err := results.WriteSummary(filepath.Join(dir, results.SummaryFile), s); err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	w, err := results.NewTimeseriesWriter(&csv)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, results.TimeseriesFile), csv.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hourRows is an hour of seconds with a sawtooth load, a latency spike every 7 minutes, and
// MOVED (no ASK) and overspend in some seconds.
func hourRows() []results.Interval {
	rows := make([]results.Interval, 3600)
	for i := range rows {
		n := int64(1000 + i%97)
		rows[i] = results.Interval{TS: float64(i), Offered: n + 3, Sent: n, Dropped: 3, Allowed: n / 2, Denied: n - n/2 - 1,
			Errors: 1, Late: int64(i % 2), P50Ms: 0.3, P99Ms: 1 + float64(i%13)/7, P999Ms: 3}
		if i%420 == 0 {
			rows[i].P99Ms = 250.125
		}
		if i%600 < 3 {
			rows[i].Moved = int64(40 + i%600)
		}
		rows[i].Overspend = int64(i % 5 / 4)
	}
	return rows
}

// TestMarkdownChartsLongRun checks that an hour of rows is aggregated into at most
// maxMermaidPoints points per line, by the stated aggregation, and that report.md stays small.
func TestMarkdownChartsLongRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRows(t, dir, hourRows())
	if err := generate(dir, []string{"svg"}); err != nil {
		t.Fatal(err)
	}
	md := checkMarkdownCharts(t, dir, []string{"Offered vs achieved requests/s (mean per 30 s)",
		"p99 latency of answered requests, ms (max per 30 s)", "MOVED redirects/s (mean per 30 s)", "Cumulative overspend"})
	// GitHub accepts 1 MiB per step summary; a report should use a small part of it.
	const limit = 32 << 10
	if len(md) > limit {
		t.Errorf("report.md of an hour's run is %d bytes, want at most %d", len(md), limit)
	}
	if !strings.Contains(md, "each point is the largest of its seconds' p99 (30 s)") {
		t.Errorf("report.md does not say how p99 points are aggregated:\n%s", md)
	}
}

// TestMarkdownChartsEdgeCases runs report.md on degenerate rows: every chart it draws must
// follow the grammar and match the rows, and too few rows give a sentence instead.
func TestMarkdownChartsEdgeCases(t *testing.T) {
	t.Parallel()
	one := results.Interval{TS: 0, Offered: 10, Sent: 10, Allowed: 7, Denied: 3, P99Ms: 1.5, Moved: 2, Overspend: 1}
	zeros := make([]results.Interval, 5)
	for i := range zeros {
		zeros[i].TS = float64(i)
	}
	tests := []struct {
		name   string
		rows   []results.Interval
		charts []string
		want   []string
	}{
		{name: "no rows", want: []string{"**No data:**", "No data: no per-second rows to chart."}},
		{name: "one row", rows: []results.Interval{one},
			want: []string{"One second recorded, too few to chart: offered 10, achieved 10 requests, p99 1.500 ms, MOVED 2, ASK 0, overspend 1 requests."}},
		{name: "two rows in one second", rows: []results.Interval{one, one},
			want: []string{"The 2 rows all fall within one second, too few to chart."}},
		{name: "two rows", rows: []results.Interval{one, {TS: 1}},
			charts: []string{"Offered vs achieved requests/s (per second)", "p99 latency", "MOVED redirects/s", "Cumulative overspend"}},
		{name: "all zeros", rows: zeros,
			charts: []string{"Offered vs achieved requests/s", "p99 latency"},
			want: []string{`y-axis "requests/s" 0 --> 1`, `y-axis "p99 (ms)" 0 --> 0.01`,
				"The per-second rows have no MOVED or ASK redirect and no overspend: nothing to chart there."}},
		{name: "lost seconds and a late start", rows: []results.Interval{{TS: 5, Offered: 4, Allowed: 4, Ask: 1}, {TS: 9, Offered: 2, Denied: 2}},
			charts: []string{"Offered vs achieved requests/s", "p99 latency", "MOVED + ASK redirects/s"},
			want: []string{`x-axis "time since start (s)" 5 --> 9`,
				"The per-second rows have no overspend: nothing to chart there."}},
		{name: "extreme values", rows: []results.Interval{{TS: 0, Offered: 1 << 50, Sent: 1 << 50, Allowed: 1 << 50, P99Ms: 1e-9},
			{TS: 1, P99Ms: 299999.999}}, charts: []string{"Offered vs achieved requests/s", "p99 latency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeRows(t, dir, tt.rows)
			if err := generate(dir, []string{"svg"}); err != nil {
				t.Fatal(err)
			}
			md := checkMarkdownCharts(t, dir, tt.charts)
			for _, w := range tt.want {
				if !strings.Contains(md, w) {
					t.Errorf("report.md lacks %q:\n%s", w, md)
				}
			}
		})
	}
}

func TestMermaidText(t *testing.T) {
	t.Parallel()
	tests := []struct{ have, want string }{
		{"requests/s (mean per 30 s)", `"requests/s (mean per 30 s)"`},
		{"a\"b\nc`d%%{init}%%#quot;<b>é", `"a b c d   init    quot  b   "`},
		{"", `""`},
	}
	for _, tt := range tests {
		if have := mermaidText(tt.have); have != tt.want {
			t.Errorf("mermaidText(%q) = %q, want %q", tt.have, have, tt.want)
		}
	}
}

func TestMermaidNum(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have float64
		want string
	}{
		{0, "0"}, {5, "5"}, {272.35, "272.35"}, {0.0004, "0"}, {0.0006, "0.001"}, {1e20, "100000000000000000000"},
		{math.NaN(), "0"}, {math.Inf(1), "0"}, {-3, "0"}, {math.Copysign(0, -1), "0"},
	}
	for _, tt := range tests {
		if have := mermaidNum(tt.have); have != tt.want {
			t.Errorf("mermaidNum(%g) = %q, want %q", tt.have, have, tt.want)
		}
	}
}

func TestRoundUp(t *testing.T) {
	t.Parallel()
	for _, v := range []float64{0.01, 0.3, 0.58, 1, 1.2, 9.99, 10, 272, 41.791, 1e15} {
		have := roundUp(v)
		if parseNum(t, mermaidNum(have)) < parseNum(t, mermaidNum(v)) || have > 10*v {
			t.Errorf("roundUp(%g) = %g, want a round number from %g to 10x", v, have, v)
		}
	}
}
