package gate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ratelab/results"
	"ratelab/results/compare"
	"ratelab/scenarios"
)

// The measured runs alternate base, head, head, base, ...: n of each for every n, never three of
// one side in a row; against a committed baseline only the head runs.
func TestOrderAlternatesABBA(t *testing.T) {
	t.Parallel()
	if have, want := strings.Join(order(Builds, 4), " "), "base head head base base head head base"; have != want {
		t.Errorf("order(Builds, 4) = %s, want %s", have, want)
	}
	for n := 1; n <= 9; n++ {
		o := order(Builds, n)
		base, head := 0, 0
		for i, s := range o {
			if s == SideBase {
				base++
			} else {
				head++
			}
			if i >= 2 && o[i-2] == s && o[i-1] == s {
				t.Errorf("order(Builds, %d) = %v: three %s runs in a row at %d", n, o, s, i)
			}
		}
		if base != n || head != n {
			t.Errorf("order(Builds, %d): %d base and %d head runs, want %d each", n, base, head, n)
		}
	}
	if have := order(Days, 3); !slices.Equal(have, []string{SideHead, SideHead, SideHead}) {
		t.Errorf("order(Days, 3) = %v, want three head runs", have)
	}
}

// Every bad option is reported at once, each naming its field, value and fix.
func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "old"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := Options{Repeat: 1, Alpha: 2, Base: "main", Against: "results/baselines/ci-smoke", HeadDelay: time.Millisecond, Out: out}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	err = o.validate()
	if err == nil {
		t.Fatal("validate: nil, want every problem")
	}
	for _, want := range []string{"repeat = 1", "alpha = 2", `base = "main" with against =`, "head-delay with against", "out = " + out + " is not empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v\nwant it to say %q", err, want)
		}
	}
	if o, _ := (Options{Out: t.TempDir()}).withDefaults(); o.validate() != nil || o.Repeat != DefaultRepeat || o.Warmup != DefaultWarmup || o.Alpha != DefaultAlpha {
		t.Errorf("defaults: %+v, validate %v; want repeat %d, warm-up %d, alpha %g and no error", o, o.validate(), DefaultRepeat, DefaultWarmup, DefaultAlpha)
	}
	if o, _ := (Options{Against: "x", Warmup: -1}).withDefaults(); o.Repeat != DefaultAgainstRepeat || o.Warmup != 0 {
		t.Errorf("against defaults: repeat %d, warm-up %d; want %d and 0", o.Repeat, o.Warmup, DefaultAgainstRepeat)
	}
}

// A built-in runs as the head's text, written into Out for both sides; a scenario the runs
// cannot share one local cluster for is refused with the reason.
func TestScenarioFile(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	path, spec, err := scenarioFile(Options{Scenario: "ci-smoke", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := scenarios.BuiltinYAML("ci-smoke")
	if have, _ := os.ReadFile(path); path != filepath.Join(out, "scenario.yaml") || !bytes.Equal(have, want) || spec.Name != "ci-smoke" {
		t.Errorf("ci-smoke: %s (spec %s), want the built-in's text in %s/scenario.yaml", path, spec.Name, out)
	}
	const small = "name: s\nduration: 5s\nload: {rate: 10}\ntenants: {count: 10}\npolicy: {rate: 10, burst: 20}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"memory", small + "limiter: {kind: memory}\n", "cluster provider"},
		{"faults", small + "faults:\n  - {at: 2s, kind: pause, target: node:0, for: 1s}\n", "has 1 faults"},
	} {
		file := filepath.Join(t.TempDir(), tc.name+".yaml")
		if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := scenarioFile(Options{Scenario: file, Out: out}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// The default base is the merge base of HEAD with main; --base takes any revision; without a
// main branch the error says to give --base.
func TestBaseRevision(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	ctx := context.Background()
	run := func(args ...string) string {
		t.Helper()
		out, err := git(ctx, repo, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	commit := func(msg string) string {
		run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", msg)
		return run("rev-parse", "HEAD")
	}
	run("init", "-q", "-b", "trunk")
	root := commit("root")
	if _, _, err := baseRevision(ctx, Options{Repo: repo}); err == nil || !strings.Contains(err.Error(), "give --base REF") {
		t.Errorf("no main branch: error %v, want advice to give --base", err)
	}
	run("branch", "main")
	commit("feature work")
	run("checkout", "-q", "main")
	commit("main moves on")
	run("checkout", "-q", "trunk")
	if sha, how, err := baseRevision(ctx, Options{Repo: repo}); err != nil || sha != root || how != "merge base of HEAD and main" {
		t.Errorf("baseRevision = %s (%s), %v; want the merge base %s", sha, how, err, root)
	}
	if sha, _, err := baseRevision(ctx, Options{Repo: repo, Base: "main~1"}); err != nil || sha != root {
		t.Errorf("--base main~1 = %s, %v; want %s", sha, err, root)
	}
	if _, _, err := baseRevision(ctx, Options{Repo: repo, Base: "no-such-ref"}); err == nil || !strings.Contains(err.Error(), `base = "no-such-ref"`) {
		t.Errorf("--base no-such-ref: error %v, want one naming it", err)
	}
}

// The builds gate judges its seven metrics with tight thresholds; the days gate every metric of
// compare with the old gate's wide ones, so a +20% p50 fails only the builds gate.
func TestCompareModes(t *testing.T) {
	t.Parallel()
	set := func(p50 float64) *compare.Set {
		s := &compare.Set{Schema: results.SchemaSummary}
		for i := range 8 {
			sum := results.NewSummary("ci-smoke", 1, time.Unix(1700000000, 0))
			sum.LatencyMs.P50 = results.Ms(p50 * (1 + float64(i)/100))
			sum.LatencyMs.P99, sum.LatencyMs.P999 = 2, 3
			sum.Load.Completed, sum.Load.AchievedRPS = 5000, 1000
			sum.CPU = &results.CPU{WallS: 5, Generator: 0.15}
			s.Runs = append(s.Runs, compare.Rep{Dir: "rep", Summary: sum})
		}
		return s
	}
	builds, err := Compare(Builds, set(0.30), set(0.36), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	days, err := Compare(Days, set(0.30), set(0.36), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(builds.Rows) != len(Metrics) || !slices.Equal(builds.Regressions(), []string{"p50_ms"}) {
		t.Errorf("builds gate: %d rows, regressions %v; want %d rows and p50_ms", len(builds.Rows), builds.Regressions(), len(Metrics))
	}
	if len(days.Rows) != len(compare.Metrics) || len(days.Regressions()) != 0 {
		t.Errorf("days gate: %d rows, regressions %v; want %d rows and none within +30%%", len(days.Rows), days.Regressions(), len(compare.Metrics))
	}
	loose, err := Compare(Builds, set(0.30), set(0.36), 0, map[string]compare.Threshold{"p50_ms": {Value: 0.25, Relative: true}})
	if err != nil || len(loose.Regressions()) != 0 {
		t.Errorf("builds gate with p50_ms=25%%: regressions %v, %v; want none", loose.Regressions(), err)
	}
}

// The days gate's headline says it compares days and when the baseline was measured.
func TestHeadlineSaysWhatItCompares(t *testing.T) {
	t.Parallel()
	sum := results.NewSummary("ci-smoke", 1, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	rep := &compare.Report{Base: &compare.Set{Runs: []compare.Rep{{Summary: sum}}}}
	days := (&Result{Mode: Days, Base: "the committed baseline b", Report: rep, Order: order(Days, 6)}).Headline()
	if !strings.Contains(days, "compares DAYS, not builds") || !strings.Contains(days, "2026-11-02") {
		t.Errorf("days headline %q: want it to say it compares days and the baseline's date", days)
	}
	builds := (&Result{Mode: Builds, Base: "abc (merge base of HEAD and main)", Head: "def", Report: rep, Order: order(Builds, 8)}).Headline()
	if !strings.Contains(builds, "compares builds") || !strings.Contains(builds, "8 runs each") {
		t.Errorf("builds headline %q: want it to say it compares builds, 8 runs each", builds)
	}
}
