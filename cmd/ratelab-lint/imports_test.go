package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// fixture is a small layering: two leaves, a layer on them with a chain, and a top layer held
// to one folder below it.
var fixture = layering{
	layers: [][]string{{"low", "leaf"}, {"mid"}, {"top"}},
	chains: [][]string{{"mid/a", "mid/b"}},
	only:   map[string][]string{"top": {"mid"}},
}

func TestForbids(t *testing.T) {
	t.Parallel()
	tests := []struct{ from, to, want string }{
		{"mid", "low", ""},
		{"mid/a", "low/x", ""},
		{"low/x", "low", ""},
		{"low/x/y", "low/x", ""},
		{"mid/b", "mid/a", ""},
		{"mid/b/c", "mid/a", ""},
		{"top", "mid/b", ""},
		{"low", "low/x", "inside low a package imports only its ancestors, or what its chain puts below it"},
		{"mid/a", "mid/b", "inside mid a package imports only its ancestors, or what its chain puts below it"},
		{"mid/a", "mid", ""},
		{"low", "leaf", "low and leaf are peers in one layer"},
		{"low", "mid", "layer mid is above layer low+leaf"},
		{"mid", "top", "layer top is above layer mid"},
		{"top", "low", "top may import only mid"},
		{"mid", "nowhere", "nowhere is in no layer"},
		{"mid", "", " is in no layer"},
	}
	for _, tt := range tests {
		if have := fixture.forbids(tt.from, tt.to); have != tt.want {
			t.Errorf("forbids(%q, %q) = %q, want %q", tt.from, tt.to, have, tt.want)
		}
	}
}

func TestCheckImports(t *testing.T) {
	t.Parallel()
	files := []string{"x.go"}
	tests := []struct {
		name string
		pkgs []pkgInfo
		want []string
	}{
		{"allowed edge", []pkgInfo{{ImportPath: "ratelab/mid", GoFiles: files, Imports: []string{"ratelab/low"}}}, nil},
		{"forbidden edge", []pkgInfo{{ImportPath: "ratelab/low", GoFiles: files, Imports: []string{"fmt", "ratelab/mid"}}},
			[]string{"ratelab/low imports forbidden: ratelab/low -> ratelab/mid (layer mid is above layer low+leaf)"}},
		{"unknown package", []pkgInfo{{ImportPath: "ratelab/new", GoFiles: files}},
			[]string{"ratelab/new: in no layer: add its top-level folder to the layers (cmd/ratelab-lint/layers.go) and to docs/architecture.md's package table"}},
		{"the module's root package", []pkgInfo{{ImportPath: "ratelab", GoFiles: files}},
			[]string{"ratelab: in no layer: add its top-level folder to the layers (cmd/ratelab-lint/layers.go) and to docs/architecture.md's package table"}},
		{"cgo files count as production", []pkgInfo{{ImportPath: "ratelab/low", CgoFiles: files, Imports: []string{"ratelab/leaf"}}},
			[]string{"ratelab/low imports forbidden: ratelab/low -> ratelab/leaf (low and leaf are peers in one layer)"}},
		{"tests-only package skipped", []pkgInfo{{ImportPath: "ratelab/new"}}, nil},
		{"other modules ignored", []pkgInfo{{ImportPath: "example.com/x", GoFiles: files, Imports: []string{"ratelab/top"}},
			{ImportPath: "ratelab/low", GoFiles: files, Imports: []string{"ratelabx/top", "github.com/redis/go-redis/v9"}}}, nil},
	}
	for _, tt := range tests {
		if have := checkImports(tt.pkgs, fixture); !slices.Equal(have, tt.want) {
			t.Errorf("%s:\nhave %q\nwant %q", tt.name, have, tt.want)
		}
	}
}

func TestLayeringCheck(t *testing.T) {
	t.Parallel()
	if have := fixture.check([]string{"low", "leaf", "mid", "top"}); len(have) != 0 {
		t.Errorf("fixture: %q, want no problems", have)
	}
	bad := layering{
		layers: [][]string{{"low", "gone"}, {"mid", "low"}, {"a/b"}},
		chains: [][]string{{"mid/a", "low/b"}},
		only:   map[string][]string{"low": {"mid"}},
	}
	want := []string{
		`layers: folder gone holds no package: drop it from the layers (cmd/ratelab-lint/layers.go)`,
		`layers: "low": a top-level folder, once`,
		`layers: "a/b": a top-level folder, once`,
		`layers: folder a/b holds no package: drop it from the layers (cmd/ratelab-lint/layers.go)`,
		`chains: low/b: every package of a chain in one folder of the layers`,
		`only: low -> mid: a folder of a layer below low's`,
	}
	if have := bad.check([]string{"low", "mid"}); !slices.Equal(have, want) {
		t.Errorf("have %q\nwant %q", have, want)
	}
}

// TestHouseLayers holds the real layering to the import direction it encodes, edge by edge.
func TestHouseLayers(t *testing.T) {
	t.Parallel()
	allowed := [][2]string{
		{"workload/trace", "workload"},
		{"results/compare", "results"},
		{"limiter", "lua"},
		{"limiter/gateway", "limiter"},
		{"limiter/gateway", "lua"},
		{"cluster/docker", "cluster"},
		{"cluster/clustertest", "cluster"},
		{"cluster/gubernator", "cluster"},
		{"report", "results"},
		{"report", "results/compare"},
		{"report/live", "report"},
		{"report/progress", "results"},
		{"scenarios", "cluster"},
		{"scenarios", "workload/trace"},
		{"scenarios", "limiter"},
		{"run/check", "limiter"},
		{"run/check", "results"},
		{"run/faults", "run/check"},
		{"run/faults", "cluster/docker"},
		{"run/faults", "limiter/gateway"},
		{"run/engine", "run/faults"},
		{"run/engine", "run/check"},
		{"run/engine", "limiter/gateway"},
		{"run/engine", "results/compare"},
		{"run/engine", "cluster/gubernator"},
		{"run/attack", "run/engine"},
		{"run/attack", "limiter/gateway"},
		{"run/attack", "scenarios"},
		{"studies/bench", "cluster"},
		{"studies/capacity", "workload"},
		{"studies/simulate", "studies/capacity"},
		{"studies/demo", "run/engine"},
		{"studies/demo", "report"},
		{"studies/wild", "cluster/gubernator"},
		{"cmd/ratelab", "studies/demo"},
		{"cmd/ratelab", "report/live"},
		{"cmd/ratelab", "lua"},
	}
	forbidden := [][2]string{
		{"workload", "results"},
		{"workload", "workload/trace"},
		{"workload/trace", "results"},
		{"results", "workload"},
		{"results/compare", "workload"},
		{"lua", "limiter"},
		{"cluster", "limiter"},
		{"cluster", "results"},
		{"cluster/docker", "scenarios"},
		{"cluster/docker", "cluster/clustertest"},
		{"limiter", "cluster"},
		{"limiter", "results"},
		{"limiter", "scenarios"},
		{"limiter", "limiter/gateway"},
		{"limiter/gateway", "cluster"},
		{"limiter/gateway", "scenarios"},
		{"scenarios", "run/engine"},
		{"scenarios", "report"},
		{"report", "cluster"},
		{"report", "limiter"},
		{"report", "scenarios"},
		{"report", "report/live"},
		{"report", "run/engine"},
		{"report/live", "scenarios"},
		{"run/check", "scenarios"},
		{"run/check", "cluster"},
		{"run/check", "run/faults"},
		{"run/faults", "run/engine"},
		{"run/engine", "run/attack"},
		{"run/engine", "report"},
		{"run/attack", "report"},
		{"run/attack", "studies/capacity"},
		{"run/attack", "studies/demo"},
		{"studies/capacity", "studies/simulate"},
		{"studies/bench", "studies/simulate"},
		{"studies/simulate", "studies/bench"},
		{"studies/demo", "studies/simulate"},
		{"studies/demo", "cmd/ratelab"},
		{"cmd/ratelab", "tools/gubernatord"},
	}
	for _, edges := range []struct {
		want  bool
		edges [][2]string
	}{{true, allowed}, {false, forbidden}} {
		for _, e := range edges.edges {
			why := house.forbids(e[0], e[1])
			if have := why == ""; have != edges.want {
				t.Errorf("%s -> %s: allowed %v, want %v (%s)", e[0], e[1], have, edges.want, why)
			}
		}
	}
	for _, unknown := range []string{"", "tools/gubernatord", "docs", "scenariosx"} {
		if i, ok := house.layerOf(unknown); ok {
			t.Errorf("%q is in layer %s, want none", unknown, house.name(i))
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
		tableDoc:                  "# x\n\n" + tableHeading + "\n\n| package | owns |\n| --- | --- |\n| `lua` | |\n| `limiter` | |\n| `results` | |\n",
	})
	have, err := lintRepo(goCmd, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mystery/mystery.go: 501 lines (max 500)",
		"layers: folder scenarios holds no package: drop it from the layers (cmd/ratelab-lint/layers.go)",
		"layers: folder run holds no package: drop it from the layers (cmd/ratelab-lint/layers.go)",
		"layers: folder report holds no package: drop it from the layers (cmd/ratelab-lint/layers.go)",
		"layers: folder studies holds no package: drop it from the layers (cmd/ratelab-lint/layers.go)",
		"layers: folder cmd holds no package: drop it from the layers (cmd/ratelab-lint/layers.go)",
		"ratelab/mystery: in no layer: add its top-level folder to the layers (cmd/ratelab-lint/layers.go) and to docs/architecture.md's package table",
		"ratelab/workload imports forbidden: ratelab/workload -> ratelab/results (workload and results are peers in one layer)",
		"docs/architecture.md:8: `limiter` (layer limiter) below `lua` (layer workload+results+cluster+lua): the rows run top to bottom, one folder's rows together, in the order of the layers (cmd/ratelab-lint/layers.go)",
		"docs/architecture.md: package `cluster` has no row in the package table (\"## Packages, top to bottom\")",
		"docs/architecture.md: package `mystery` has no row in the package table (\"## Packages, top to bottom\")",
		"docs/architecture.md: package `workload` has no row in the package table (\"## Packages, top to bottom\")",
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
