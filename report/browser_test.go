package report_test

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ratelab/cluster/clustertest"
	"ratelab/report"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// browserRun is a real run for the browser to render: a short scenario on a real local cluster
// with a fault, so the report has every chart, fault markers and SLO verdicts.
const browserRun = `name: browser-check
duration: 3s
seed: 5
load: {rate: 500, concurrency: 16, max_inflight: 256}
tenants: {count: 200, theta: 0.99}
endpoints: [{name: read, weight: 0.7}, {name: write, weight: 0.3}]
policy: {rate: 20, burst: 40}
limiter: {timeout: 1s}
cluster: {primaries: 2, replicas: 0}
faults: [{at: 1s, kind: script-flush, target: all}]
slo: {p99_ms: 1000, overspend_ratio: 0.05}
`

// selfCheck is what report.html's inline script writes into <html data-selfcheck>.
type selfCheck struct {
	Figures int      `json:"figures"`
	Checked int      `json:"checked"`
	Bad     []string `json:"bad"`
	Errors  []string `json:"errors"`
}

// chromium finds Debian's chromium. Without it the test skips, unless RATELAB_REQUIRE_BROWSER=1
// (CI sets it): then a missing browser fails the test instead of hiding it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	clustertest.SkipUnlessRequired(t, clustertest.RequireBrowser, "no chromium or chromium-browser on PATH (apt-get install -y chromium)")
	return ""
}

// headless runs chromium headless on page with extra flags and returns its stdout.
func headless(t *testing.T, bin, page string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000"}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, flags, err, stderr.String())
	}
	return string(out)
}

var selfCheckAttr = regexp.MustCompile(`data-selfcheck="([^"]*)"`)

// render loads page in the browser and returns the self-check its script recorded.
func render(t *testing.T, bin, page string) selfCheck {
	t.Helper()
	dom := headless(t, bin, page, "--dump-dom")
	m := selfCheckAttr.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the rendered page has no data-selfcheck: its script did not run to the load event; DOM starts:\n%.600s", dom)
	}
	var sc selfCheck
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &sc); err != nil {
		t.Fatalf("data-selfcheck %q: %v", m[1], err)
	}
	return sc
}

// TestReportInBrowser renders the report of a real run in headless chromium: it renders, no
// script error, every chart present with a non-zero size; and a screenshot for review.
func TestReportInBrowser(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	spec, err := scenarios.Parse("browser-check.yaml", []byte(browserRun))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := engine.Run(ctx, spec, engine.Options{Out: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Generate(res.Dir); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(res.Dir, report.HTMLFile)

	sc := render(t, bin, page)
	t.Logf("self-check: %+v", sc)
	if len(sc.Errors) > 0 {
		t.Errorf("script or console errors while rendering: %q", sc.Errors)
	}
	if sc.Figures < 5 || sc.Checked < sc.Figures {
		t.Errorf("%d figures, %d charts checked: want every chart (at least 5) in a figure", sc.Figures, sc.Checked)
	}
	if len(sc.Bad) > 0 {
		t.Errorf("charts missing, empty or of zero size: %v", sc.Bad)
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	headless(t, bin, page, "--screenshot="+shot, "--window-size=1400,6000", "--hide-scrollbars")
	if st, err := os.Stat(shot); err != nil || st.Size() < 50_000 {
		t.Errorf("screenshot %s: %v (size %v): want a picture of the whole report", shot, err, st)
	}
	t.Logf("screenshot: %s", shot)
	if dst := os.Getenv("RATELAB_SCREENSHOT"); dst != "" {
		if data, err := os.ReadFile(shot); err == nil {
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				t.Errorf("RATELAB_SCREENSHOT=%s: %v", dst, err)
			}
		}
	}

	// The check itself must be able to fail: the same page with a broken script and an empty
	// chart reports both.
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), "</body>",
		`<figure id="empty-chart"><svg width="0" height="0"></svg></figure><script>noSuchFunction();</script></body>`, 1)
	brokenPage := filepath.Join(t.TempDir(), "broken.html")
	if err := os.WriteFile(brokenPage, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	sc = render(t, bin, brokenPage)
	if len(sc.Errors) == 0 || !strings.Contains(strings.Join(sc.Bad, ","), "empty-chart") {
		t.Errorf("self-check of a broken page %+v: want the script error and the empty chart", sc)
	}
}
