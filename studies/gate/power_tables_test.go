//go:build experiment

package gate

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"ratelab/results"
	"ratelab/results/compare"
)

// detectGoal is the share of gates that must catch an effect for it to be detectable.
const detectGoal = 0.9

// scaledEffects are the shifts, in percent, put on the head's measured values of the same-build
// trials to estimate each metric's minimal detectable effect on this machine's own noise.
var scaledEffects = []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 75, 100}

// looseAlpha is the significance level the same runs are judged at again, to show what a
// looser gate would have gained and cost.
const looseAlpha = 0.05

// view is one gate's verdicts on a trial's runs.
type view struct {
	name string
	regs func(trial) []string
}

// views are the gates the tables compare: the builds gate as run, the same runs judged at
// looseAlpha, and the committed-baseline gate on the head's runs.
var views = []view{
	{"builds", func(t trial) []string { return t.Builds }},
	{fmt.Sprintf("builds at alpha %g (same runs)", looseAlpha), func(t trial) []string { return t.Loose }},
	{"committed baseline", func(t trial) []string { return t.Days }},
}

// tables renders the experiment's tables as Markdown.
func tables(all []trial, repeat int) string {
	var b strings.Builder
	var trials []trial
	broken := map[string]int{}
	for _, tr := range all {
		if tr.Error != "" {
			broken[fmt.Sprintf("%s %gµs", tr.Condition, tr.DelayUs)]++
			continue
		}
		tr.Loose = judgeAt(tr, looseAlpha)
		trials = append(trials, tr)
	}
	fmt.Fprintf(&b, "# Gate power on this machine\n\n%d runs per side (builds gate; the committed-baseline gate takes the head's first %d), alpha %g.\n\n",
		repeat, DefaultAgainstRepeat, DefaultAlpha)
	if len(broken) > 0 {
		fmt.Fprintf(&b, "Trials without a verdict (a run broke; left out of the tables): %s.\n\n", counts(broken))
	}
	falseAlarms(&b, trials)
	power(&b, trials)
	pooled(&b, trials, repeat)
	scaled(&b, trials)
	return b.String()
}

// pooled estimates a gate of twice the runs: consecutive trials of one condition (and delay)
// paired, their base runs and head runs joined, judged at the gate's alpha. The two halves ran
// minutes apart, as the two halves of a longer gate would.
func pooled(b *strings.Builder, trials []trial, repeat int) {
	groups := map[string][]trial{}
	var keys []string
	for _, tr := range trials {
		k := fmt.Sprintf("%s|%g", tr.Condition, tr.DelayUs)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], tr)
	}
	fmt.Fprintf(b, "## A gate of %d runs per side: pairs of consecutive trials joined\n\n", 2*repeat)
	b.WriteString("| condition | delay each way | pooled gates | alarms | p50 caught | p99 caught | CPU caught |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	sort.Slice(keys, func(i, j int) bool {
		a, b := groups[keys[i]][0], groups[keys[j]][0]
		return a.Condition < b.Condition || (a.Condition == b.Condition && a.DelayUs < b.DelayUs)
	})
	for _, k := range keys {
		g := groups[k]
		var joined []trial
		for i := 0; i+1 < len(g); i += 2 {
			j := trial{Condition: g[i].Condition, DelayUs: g[i].DelayUs, Base: map[string][]float64{}, Head: map[string][]float64{}}
			for _, m := range Metrics {
				j.Base[m] = append(slices.Clone(g[i].Base[m]), g[i+1].Base[m]...)
				j.Head[m] = append(slices.Clone(g[i].Head[m]), g[i+1].Head[m]...)
			}
			j.Builds = judgeAt(j, DefaultAlpha)
			joined = append(joined, j)
		}
		if len(joined) == 0 {
			continue
		}
		v := views[0]
		fmt.Fprintf(b, "| %s | %gµs | %d | %s | %s | %s | %s |\n", g[0].Condition, g[0].DelayUs, len(joined),
			caught(joined, "", v), caught(joined, "p50_ms", v), caught(joined, "p99_ms", v), caught(joined, "generator_cpu_us", v))
	}
	b.WriteString("\n")
}

// judgeAt judges a trial's runs again, metric by metric as the builds gate does, at alpha.
func judgeAt(tr trial, alpha float64) []string {
	var out []string
	for _, m := range Metrics {
		rep, err := compare.Compare(oneMetricSet(m, tr.Base[m], 1), oneMetricSet(m, tr.Head[m], 1),
			compare.Options{Alpha: alpha, Thresholds: Thresholds(), Metrics: []string{m}})
		if err == nil && rep.Regressed() {
			out = append(out, m)
		}
	}
	return out
}

// falseAlarms is the table of same-build trials: how many gates failed, and on what.
func falseAlarms(b *strings.Builder, trials []trial) {
	b.WriteString("## False alarms: one build against itself\n\n| gate | condition | trials | false alarms | metrics |\n| --- | --- | --- | --- | --- |\n")
	for _, v := range views {
		for _, cond := range []string{"quiet", "neighbour"} {
			n, alarms, metrics := 0, 0, map[string]int{}
			for _, tr := range trials {
				if tr.Condition != cond {
					continue
				}
				n++
				regs := v.regs(tr)
				if len(regs) > 0 {
					alarms++
				}
				for _, m := range regs {
					metrics[m]++
				}
			}
			if n > 0 {
				fmt.Fprintf(b, "| %s | %s | %d | %d | %s |\n", v.name, cond, n, alarms, counts(metrics))
			}
		}
	}
	b.WriteString("\n")
}

// power is the table of injected delays: the effect they had and how often each gate caught it.
func power(b *strings.Builder, trials []trial) {
	delays := map[float64]bool{}
	for _, tr := range trials {
		if tr.Condition == "power" {
			delays[tr.DelayUs] = true
		}
	}
	if len(delays) == 0 {
		return
	}
	ds := make([]float64, 0, len(delays))
	for d := range delays {
		ds = append(ds, d)
	}
	sort.Float64s(ds)
	b.WriteString("## Power: a delay injected into the head's runs (every primary, each way)\n\n")
	b.WriteString("Effect: the median over trials of head median / base median - 1 (the builds gate's runs, both sides through the latency proxy). " +
		"Caught: trials whose gate named the metric. The committed baseline ran without the proxy, so for that gate the proxy's own cost is part of the effect.\n\n")
	b.WriteString("| delay each way | gate | trials | p50 effect | p99 effect | CPU effect | p50 caught | p99 caught | CPU caught | any caught |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, d := range ds {
		var sel []trial
		for _, tr := range trials {
			if tr.Condition == "power" && tr.DelayUs == d {
				sel = append(sel, tr)
			}
		}
		for _, v := range views {
			fmt.Fprintf(b, "| %g µs | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", d, v.name, len(sel),
				effect(sel, "p50_ms"), effect(sel, "p99_ms"), effect(sel, "generator_cpu_us"),
				caught(sel, "p50_ms", v), caught(sel, "p99_ms", v), caught(sel, "generator_cpu_us", v), caught(sel, "", v))
		}
	}
	b.WriteString("\n")
}

// scaled estimates each metric's minimal detectable effect from the same-build trials: the
// head's measured values multiplied by 1 + effect, judged by the gate, per condition.
func scaled(b *strings.Builder, trials []trial) {
	b.WriteString("## Minimal detectable effect on the same-build runs' own noise\n\n")
	b.WriteString("The head's measured values of each same-build trial multiplied by 1 + effect and judged again: the smallest effect caught in at least 90% of trials.\n\n")
	b.WriteString("| gate | condition | trials | p50_ms | p99_ms | generator_cpu_us |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, mode := range []Mode{Builds, Days} {
		for _, cond := range []string{"quiet", "neighbour"} {
			var sel []trial
			for _, tr := range trials {
				if tr.Condition == cond {
					sel = append(sel, tr)
				}
			}
			if len(sel) == 0 {
				continue
			}
			name := "builds"
			if mode == Days {
				name = "committed baseline"
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s |\n", name, cond, len(sel),
				mde(sel, mode, "p50_ms"), mde(sel, mode, "p99_ms"), mde(sel, mode, "generator_cpu_us"))
		}
	}
	b.WriteString("\n")
}

// mde is the smallest scaled effect on metric caught in detectGoal of sel's trials.
func mde(sel []trial, mode Mode, metric string) string {
	if mode == Days && metric == "generator_cpu_us" {
		return "not in the baseline"
	}
	for _, e := range scaledEffects {
		hit := 0
		for _, tr := range sel {
			if scaledCaught(tr, mode, metric, 1+e/100) {
				hit++
			}
		}
		if float64(hit) >= detectGoal*float64(len(sel)) {
			return fmt.Sprintf("+%g%% (%d/%d)", e, hit, len(sel))
		}
	}
	return fmt.Sprintf("> +%g%%", scaledEffects[len(scaledEffects)-1])
}

// scaledCaught judges tr's runs on metric alone with the head's values multiplied by factor.
func scaledCaught(tr trial, mode Mode, metric string, factor float64) bool {
	base := oneMetricSet(metric, tr.Base[metric], 1)
	head := oneMetricSet(metric, tr.Head[metric], factor)
	if mode == Days {
		base = daysBaseline(metric)
		head.Runs = head.Runs[:min(len(head.Runs), DefaultAgainstRepeat)]
	}
	opts := compare.Options{Alpha: DefaultAlpha, Thresholds: Thresholds(), Metrics: []string{metric}}
	if mode == Days {
		opts.Thresholds = DaysThresholds()
	}
	rep, err := compare.Compare(base, head, opts)
	return err == nil && slices.Contains(rep.Regressions(), metric)
}

// oneMetricSet is a set of summaries that hold only metric's values, times factor.
func oneMetricSet(metric string, vals []float64, factor float64) *compare.Set {
	s := &compare.Set{Schema: results.SchemaSummary, Paths: []string{metric}}
	for _, v := range vals {
		sum := &results.Summary{Schema: results.SchemaSummary, Scenario: "ci-smoke"}
		v *= factor
		switch metric {
		case "p50_ms":
			sum.LatencyMs.P50 = results.Ms(v)
		case "p99_ms":
			sum.LatencyMs.P99 = results.Ms(v)
		case "generator_cpu_us":
			sum.Load.Completed = 1_000_000
			sum.CPU = &results.CPU{WallS: 1, Generator: v}
		case "achieved_rps":
			sum.Load.AchievedRPS = v
		case "overspend_ratio":
			sum.Overspend.Ratio = v
		case "false_deny_ratio":
			sum.Overspend.FalseDenyRatio = v
		case "error_ratio":
			sum.Load.Completed = 1_000_000
			sum.Outcomes.Errors = int64(math.Round(v * 1e6))
		}
		s.Runs = append(s.Runs, compare.Rep{Summary: sum})
	}
	return s
}

// daysBaseline is the committed baseline's values of metric as a one-metric set.
func daysBaseline(metric string) *compare.Set {
	set, err := compare.Load(committedBaseline)
	if err != nil {
		return &compare.Set{}
	}
	m := compare.Metrics[slices.IndexFunc(compare.Metrics, func(m compare.Metric) bool { return m.Name == metric })]
	vals := make([]float64, len(set.Runs))
	for i, r := range set.Runs {
		vals[i] = m.Value(r.Summary)
	}
	return oneMetricSet(metric, vals, 1)
}

// effect is the median over sel of head median / base median - 1 for metric, in percent.
func effect(sel []trial, metric string) string {
	var xs []float64
	for _, tr := range sel {
		m := tr.Medians[metric]
		if m[0] > 0 && !math.IsInf(m[1], 0) {
			xs = append(xs, m[1]/m[0]-1)
		}
	}
	if len(xs) == 0 {
		return "—"
	}
	sort.Float64s(xs)
	return fmt.Sprintf("%+.1f%%", 100*xs[len(xs)/2])
}

// caught is "k/n" of the trials in sel whose gate (v) named metric ("" = any metric).
func caught(sel []trial, metric string, v view) string {
	hit := 0
	for _, tr := range sel {
		regs := v.regs(tr)
		if (metric == "" && len(regs) > 0) || (metric != "" && slices.Contains(regs, metric)) {
			hit++
		}
	}
	return fmt.Sprintf("%d/%d", hit, len(sel))
}

// counts writes "p99_ms 2, p50_ms 1", most first; "—" when empty.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// TestGatePowerTables rewrites gate-power.md from the trials.json of an experiment (make
// gate-power writes both as it goes; this redraws the tables after a change to them):
// RATELAB_GATE_OUT=out/experiments/gate-power go test -tags experiment -run TestGatePowerTables ./studies/gate
func TestGatePowerTables(t *testing.T) {
	out := os.Getenv(envOut)
	if out == "" {
		t.Skipf("set %s to the directory of a trials.json", envOut)
	}
	b, err := os.ReadFile(filepath.Join(out, "trials.json"))
	if err != nil {
		t.Fatal(err)
	}
	var trials []trial
	if err := json.Unmarshal(b, &trials); err != nil {
		t.Fatal(err)
	}
	for _, tr := range trials {
		// The one-metric re-judgement at the gate's alpha must agree with the verdict the gate gave.
		if again := judgeAt(tr, DefaultAlpha); tr.Error == "" && !slices.Equal(again, tr.Builds) {
			t.Errorf("%s %gµs trial %d: re-judged %v, the gate said %v", tr.Condition, tr.DelayUs, tr.Index, again, tr.Builds)
		}
	}
	repeat := envInt(t, envRepeat, DefaultRepeat)
	if err := os.WriteFile(filepath.Join(out, "gate-power.md"), []byte(tables(trials, repeat)), 0o644); err != nil {
		t.Fatal(err)
	}
}
