package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// perfGateWorkflow is the GitHub Actions recipe docs/ci.md shows.
const perfGateWorkflow = "../../.github/workflows/perf-gate.yml"

// workflow is the part of a GitHub Actions workflow the shape test reads.
type workflow struct {
	Name string         `yaml:"name"`
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		RunsOn string `yaml:"runs-on"`
		Steps  []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			If   string            `yaml:"if"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestPerfGateWorkflowShape: the workflow parses, runs on pull requests with the history the
// base's build needs, every make target and ratelab command and flag its steps name exists, it
// fails on the gate's exit 3, its summary reads the files the gate writes, and docs/ci.md shows
// it as it is.
func TestPerfGateWorkflowShape(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(perfGateWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("%s does not parse: %v", perfGateWorkflow, err)
	}
	if _, ok := wf.On["pull_request"]; !ok || len(wf.Jobs) == 0 {
		t.Fatalf("%s: on %v, %d jobs; want pull_request and a job", perfGateWorkflow, wf.On, len(wf.Jobs))
	}
	targets := makeTargets(t)
	var scripts []string
	fullHistory := false
	for name, job := range wf.Jobs {
		for i, st := range job.Steps {
			if strings.HasPrefix(st.Uses, "actions/checkout@") && st.With["fetch-depth"] == "0" {
				fullHistory = true
			}
			if st.Run == "" {
				continue
			}
			scripts = append(scripts, st.Run)
			for _, p := range checkScript(newRootCmd(), targets, st.Run) {
				t.Errorf("job %s step %d (%s): %s", name, i+1, st.Name, p)
			}
		}
	}
	all := strings.Join(scripts, "\n")
	for _, want := range []string{"ratelab perf-check", `"$rc" -eq 3`, "out/perf-check/compare.md", "out/perf-check/head/rep-01/report.md", "$GITHUB_STEP_SUMMARY"} {
		if !strings.Contains(all, want) {
			t.Errorf("%s: no step says %q", perfGateWorkflow, want)
		}
	}
	if !fullHistory {
		t.Errorf("%s: actions/checkout without fetch-depth: 0; the gate needs the base branch's history", perfGateWorkflow)
	}
	doc, err := os.ReadFile("../../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(raw)+"```") {
		t.Errorf("docs/ci.md does not show %s as it is (a ```yaml block with the file's text)", perfGateWorkflow)
	}
}

// The checker finds what it is for: an unknown make target, ratelab command or flag.
func TestCheckScriptFindsUnknownNames(t *testing.T) {
	t.Parallel()
	targets := makeTargets(t)
	script := "make redis no-such-target\n./bin/ratelab perf-check --base main --no-such-flag x \\\n  --out o\nratelab no-such-command\nratelab compare -o md a b"
	probs := checkScript(newRootCmd(), targets, script)
	for _, want := range []string{"make target no-such-target", "--no-such-flag", `"no-such-command"`} {
		if !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("problems %q: want one about %s", probs, want)
		}
	}
	if len(probs) != 3 {
		t.Errorf("problems %q: want exactly 3 (redis, perf-check --base/--out and compare -o are real)", probs)
	}
}

// makeTargets reads the Makefile's rule targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+):`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// checkScript lists the make targets, ratelab commands and flags a shell script names that do
// not exist. It reads simple commands: words split on blanks, quotes stripped, a command ending
// at a shell operator.
func checkScript(root *cobra.Command, targets map[string]bool, script string) []string {
	var probs []string
	script = strings.ReplaceAll(script, "\\\n", " ")
	for _, line := range strings.Split(script, "\n") {
		words := strings.Fields(strings.NewReplacer(`"`, " ", `'`, " ", "(", " ", ")", " ").Replace(line))
		for i, w := range words {
			args := commandArgs(words[i+1:])
			switch {
			case w == "make":
				for _, a := range args {
					if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && !targets[a] {
						probs = append(probs, "make target "+a+" is not in the Makefile")
					}
				}
			case w == "ratelab" || strings.HasSuffix(w, "/ratelab"):
				probs = append(probs, checkRatelab(root, args)...)
			}
		}
	}
	return probs
}

// commandArgs are the words of one command: up to the first shell operator.
func commandArgs(words []string) []string {
	for i, w := range words {
		if slices.Contains([]string{"&&", "||", ";", "|", ">", ">>", "2>&1"}, w) {
			return words[:i]
		}
	}
	return words
}

// checkRatelab checks a ratelab command line against the cobra tree: the command path exists
// and every flag is one of its flags.
func checkRatelab(root *cobra.Command, args []string) []string {
	cmd, rest, err := root.Find(args)
	if err != nil {
		return []string{fmt.Sprintf("ratelab %s: %v", strings.Join(args, " "), err)}
	}
	if cmd == root && len(args) > 0 {
		return []string{fmt.Sprintf("ratelab %q: no such command", args[0])}
	}
	var probs []string
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var found bool
		if strings.HasPrefix(a, "--") {
			found = cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil
		} else {
			found = cmd.Flags().ShorthandLookup(name[:1]) != nil || cmd.InheritedFlags().ShorthandLookup(name[:1]) != nil
		}
		if !found {
			probs = append(probs, fmt.Sprintf("ratelab %s has no flag %s", cmd.CommandPath(), a))
		}
	}
	return probs
}
