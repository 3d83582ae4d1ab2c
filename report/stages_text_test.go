package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// TestWriteTextStages: a run with load stages names the offered rate at which each per-second
// check first failed and the checks that never did; a run without stages prints no such row.
func TestWriteTextStages(t *testing.T) {
	t.Parallel()
	s := results.NewSummary("ramp", 1, time.Unix(0, 0))
	var b bytes.Buffer
	if err := WriteText(&b, s, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "stages") {
		t.Errorf("a run without stages prints a stages row:\n%s", b.String())
	}
	ratio := 0.9279
	s.Stages = &results.Stages{
		Checked: []string{"p99_ms", "error_ratio", "achieved_ratio"},
		FirstFailure: []results.StageFailure{
			{Check: "p99_ms", AtS: 25, OfferedRPS: 12750, Limit: 25, FailedSeconds: 26},
			{Check: "achieved_ratio", AtS: 26, OfferedRPS: 13250, Value: &ratio, Limit: 0.95, FailedSeconds: 22},
		},
		PeakOfferedRPS: 29750,
	}
	b.Reset()
	if err := WriteText(&b, s, ""); err != nil {
		t.Fatal(err)
	}
	want := "p99_ms first failed at 25 s, 12750 offered/s (not measurable, limit 25; 26 s failed); " +
		"achieved_ratio first failed at 26 s, 13250 offered/s (0.9279, limit 0.95; 22 s failed); " +
		"error_ratio passed every second; peak 29750 offered/s"
	if !strings.Contains(b.String(), "  stages ") || !strings.Contains(b.String(), want) {
		t.Errorf("text lacks\n%q:\n%s", want, b.String())
	}
}

// TestGenerateStages: report.md and report.html show a run's load stages table (a not
// measurable value as such), and a run without stages has none (the golden reports).
func TestGenerateStages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := fixture{seed: 3, rows: 5}.write(t, dir)
	s.Stages = &results.Stages{
		Checked:        []string{"p99_ms", "error_ratio"},
		FirstFailure:   []results.StageFailure{{Check: "p99_ms", AtS: 3, OfferedRPS: 250, Limit: 25, FailedSeconds: 2}},
		PeakOfferedRPS: 290,
	}
	if err := results.WriteSummary(filepath.Join(dir, results.SummaryFile), s); err != nil {
		t.Fatal(err)
	}
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	md, html := string(read(t, dir, MarkdownFile)), string(read(t, dir, "report.html"))
	if want := "| `p99_ms` | 3 s | 250.0 | not measurable | 25 | 2 |"; !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q", want)
	}
	if want := `<td><code>p99_ms</code></td><td class="num">3 s</td><td class="num">250.0</td><td class="num">not measurable</td>`; !strings.Contains(html, want) {
		t.Errorf("report.html lacks %q", want)
	}
	if !strings.Contains(md, "Judged every second: `p99_ms`, `error_ratio`") {
		t.Errorf("report.md does not say which checks were judged per second")
	}
}
