package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"ratelab/limiter", "ratelab/limiter", true},
		{"ratelab/limiter", "ratelab/limiter/gateway", false},
		{"ratelab/limiter/...", "ratelab/limiter", true},
		{"ratelab/limiter/...", "ratelab/limiter/gateway", true},
		{"ratelab/limiter/...", "ratelab/limiterx", false},
		{"ratelab/...", "ratelab/cmd/ratelab", true},
	}
	for _, tt := range tests {
		if have := match(tt.pattern, tt.path); have != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, have, tt.want)
		}
	}
}

func TestRuleForPrefersTheClosestPattern(t *testing.T) {
	t.Parallel()
	table := []layerRule{
		{pkg: "ratelab/a/..."},
		{pkg: "ratelab/a/b/..."},
		{pkg: "ratelab/a/b"},
	}
	tests := []struct{ pkg, want string }{
		{"ratelab/a", "ratelab/a/..."},
		{"ratelab/a/x", "ratelab/a/..."},
		{"ratelab/a/b", "ratelab/a/b"},
		{"ratelab/a/b/c", "ratelab/a/b/..."},
		{"ratelab/z", ""},
	}
	for _, tt := range tests {
		have, ok := ruleFor(table, tt.pkg)
		if have.pkg != tt.want || ok != (tt.want != "") {
			t.Errorf("ruleFor(%q) = %q, %v; want %q", tt.pkg, have.pkg, ok, tt.want)
		}
	}
}

func TestCheckImports(t *testing.T) {
	t.Parallel()
	table := []layerRule{
		{pkg: "ratelab/low"},
		{pkg: "ratelab/high", allow: []string{"ratelab/low"}},
	}
	files := []string{"x.go"}
	tests := []struct {
		name string
		pkgs []pkgInfo
		want []string
	}{
		{"allowed edge", []pkgInfo{{ImportPath: "ratelab/high", GoFiles: files, Imports: []string{"ratelab/low"}}}, nil},
		{"forbidden edge", []pkgInfo{{ImportPath: "ratelab/low", GoFiles: files, Imports: []string{"fmt", "ratelab/high"}}},
			[]string{"ratelab/low imports forbidden: ratelab/low -> ratelab/high (rule low: imports nothing of ours)"}},
		{"forbidden edge cites the allow-list", []pkgInfo{{ImportPath: "ratelab/high", GoFiles: files, Imports: []string{"ratelab/top"}}},
			[]string{"ratelab/high imports forbidden: ratelab/high -> ratelab/top (rule high: may import only low)"}},
		{"unknown package", []pkgInfo{{ImportPath: "ratelab/new", GoFiles: files}},
			[]string{"ratelab/new: no row of the layer table matches it: add it to the layer table (cmd/ratelab-lint/layers.go)"}},
		{"cgo files count as production", []pkgInfo{{ImportPath: "ratelab/low", CgoFiles: files, Imports: []string{"ratelab/high"}}},
			[]string{"ratelab/low imports forbidden: ratelab/low -> ratelab/high (rule low: imports nothing of ours)"}},
		{"tests-only package skipped", []pkgInfo{{ImportPath: "ratelab/new"}}, nil},
		{"other modules ignored", []pkgInfo{{ImportPath: "example.com/x", GoFiles: files, Imports: []string{"ratelab/high"}},
			{ImportPath: "ratelab/low", GoFiles: files, Imports: []string{"ratelabx/high", "github.com/redis/go-redis/v9"}}}, nil},
	}
	for _, tt := range tests {
		if have := checkImports(tt.pkgs, table); !slices.Equal(have, tt.want) {
			t.Errorf("%s:\nhave %q\nwant %q", tt.name, have, tt.want)
		}
	}
}

// TestLayerTable holds the real table to the layering it encodes, edge by edge.
func TestLayerTable(t *testing.T) {
	t.Parallel()
	allowed := [][2]string{
		{"workload/trace", "workload"},
		{"results/compare", "results"},
		{"limiter", "lua"},
		{"limiter/gateway", "limiter"},
		{"limiter/gateway", "lua"},
		{"cluster/docker", "cluster"},
		{"cluster/clustertest", "cluster"},
		{"report", "results"},
		{"report/story", "report"},
		{"report/progress", "results"},
		{"scenarios", "cluster"},
		{"scenarios", "workload/trace"},
		{"scenarios", "limiter"},
		{"run/check", "limiter"},
		{"run/faults", "run/check"},
		{"run/faults", "cluster/docker"},
		{"run/engine", "run/faults"},
		{"run/engine", "limiter/gateway"},
		{"run/engine", "results/compare"},
		{"run/attack", "run/engine"},
		{"run/attack", "limiter/gateway"},
		{"run/attack", "scenarios"},
		{"studies/bench", "cluster"},
		{"studies/capacity", "workload"},
		{"studies/simulate", "studies/capacity"},
		{"studies/demo", "studies/simulate"},
		{"studies/demo", "run/engine"},
		{"studies/demo", "report/story"},
		{"cmd/ratelab", "studies/demo"},
		{"cmd/ratelab", "report"},
	}
	forbidden := [][2]string{
		{"workload", "results"},
		{"workload/trace", "results"},
		{"results", "workload"},
		{"results/compare", "workload"},
		{"lua", "limiter"},
		{"limiter", "cluster"},
		{"limiter", "limiter/gateway"},
		{"limiter/gateway", "cluster"},
		{"cluster", "limiter"},
		{"cluster/docker", "scenarios"},
		{"report", "results/compare"},
		{"report/story", "scenarios"},
		{"report", "cluster"},
		{"scenarios", "cluster/docker"},
		{"scenarios", "report"},
		{"scenarios", "run/engine"},
		{"run/check", "scenarios"},
		{"run/faults", "run/engine"},
		{"run/faults", "limiter/gateway"},
		{"run/engine", "run/attack"},
		{"run/engine", "report"},
		{"run/attack", "studies/capacity"},
		{"studies/bench", "studies/simulate"},
		{"studies/capacity", "studies/simulate"},
		{"studies/simulate", "studies/bench"},
		{"run/attack", "report"},
		{"run/attack", "studies/demo"},
		{"studies/demo", "cmd/ratelab"},
	}
	for _, edges := range []struct {
		want  bool
		edges [][2]string
	}{{true, allowed}, {false, forbidden}} {
		for _, e := range edges.edges {
			from, to := module+"/"+e[0], module+"/"+e[1]
			rule, ok := ruleFor(layers, from)
			if !ok {
				t.Errorf("%s: no rule", from)
				continue
			}
			if have := rule.allows(to); have != edges.want {
				t.Errorf("%s -> %s: allowed %v, want %v (%s)", from, to, have, edges.want, rule)
			}
		}
	}
	for _, unknown := range []string{"ratelab", "ratelab/limiter/extra", "ratelab/workload/extra", "ratelab/scenarios/extra"} {
		if rule, ok := ruleFor(layers, unknown); ok {
			t.Errorf("%s matches %s, want no rule", unknown, rule.pkg)
		}
	}
}

func TestLayerTableWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range layers {
		if seen[r.pkg] {
			t.Errorf("%s: two rows", r.pkg)
		}
		seen[r.pkg] = true
		for _, p := range append([]string{r.pkg}, r.allow...) {
			if !ours(strings.TrimSuffix(p, "/...")) {
				t.Errorf("row %s: pattern %q is not in module %s", r.pkg, p, module)
			}
		}
	}
}

// TestLintRepoFixtureModule runs the whole check, go list included, over a small module named
// like ours: production imports are checked, test imports are not.
func TestLintRepoFixtureModule(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOWORK", "off")
	root := writeTree(t, map[string]string{
		"go.mod":                  "module ratelab\n\ngo 1.26.0\n",
		"lua/lua.go":              "package lua\n",
		"lua/x_test.go":           "package lua_test\n\nimport _ \"ratelab/workload\"\n",
		"limiter/limiter.go":      "package limiter\n\nimport _ \"ratelab/lua\"\n",
		"limiter/limiter_test.go": "package limiter\n\nimport _ \"ratelab/cluster\"\n",
		"cluster/cluster.go":      "package cluster\n",
		"results/results.go":      "package results\n",
		"workload/workload.go":    "package workload\n\nimport _ \"ratelab/results\"\n",
		"mystery/mystery.go":      "package mystery\n" + lines(500),
		"cluster/only_test.go":    "package cluster\n\nimport _ \"ratelab/limiter\"\n",
	})
	have, err := lintRepo(goCmd, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mystery/mystery.go: 501 lines (max 500)",
		"ratelab/mystery: no row of the layer table matches it: add it to the layer table (cmd/ratelab-lint/layers.go)",
		"ratelab/workload imports forbidden: ratelab/workload -> ratelab/results (rule workload: imports nothing of ours)",
	}
	if !slices.Equal(have, want) {
		t.Errorf("have %q\nwant %q", have, want)
	}
}

func TestLintRepoGoListFails(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"x.go": head + lines(600)}) // no go.mod
	have, err := lintRepo("go", root)
	if err == nil || !strings.Contains(err.Error(), "go list") {
		t.Errorf("err = %v, want a go list error", err)
	}
	if want := []string{"x.go: 602 lines (max 500)"}; !slices.Equal(have, want) {
		t.Errorf("have %q, want the size problems kept: %q", have, want)
	}
}
