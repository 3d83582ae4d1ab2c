package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// table is a page with the package table of rows, after some text that is not the table.
func table(rows ...string) []byte {
	return []byte("# Page\n\n| not | this |\n| --- | --- |\n| `mid` | |\n\n" + tableHeading + "\n\nText.\n\n" +
		"| package | owns |\n| --- | --- |\n" + strings.Join(rows, "\n") + "\n\nMore text.\n\n| `x` | |\n")
}

func TestCheckTable(t *testing.T) {
	t.Parallel()
	pkgs := []string{"top", "mid", "mid/a", "mid/b", "low", "low/x", "leaf"}
	good := []string{"| `top` | the top |", "| `mid`, `mid/a` | |", "| `mid/b` | |", "| `leaf` | |", "| `low`, `low/x` | |"}
	const order = ": the rows run top to bottom, one folder's rows together, in the order of the layers (cmd/ratelab-lint/layers.go)"
	tests := []struct {
		name string
		doc  []byte
		want []string
	}{
		{"matches", table(good...), nil},
		{"peers in either order", table("| `top` | |", "| `mid`, `mid/a`, `mid/b` | |", "| `low`, `low/x` | |", "| `leaf` | |"), nil},
		{"a package with no row", table(good[0], good[1], good[3], good[4]),
			[]string{"docs/architecture.md: package `mid/b` has no row in the package table (\"## Packages, top to bottom\")"}},
		{"a folder with no row", table(good[0], good[1], good[2], good[4]),
			[]string{"docs/architecture.md: package `leaf` has no row in the package table (\"## Packages, top to bottom\")"}},
		{"a row with no package", table(append([]string{"| `gone` | moved away |"}, good...)...),
			[]string{"docs/architecture.md:13: `gone`: no such package in the module: drop the row or fix the path"}},
		{"a package in two rows", table(append(good, "| `top` | again |")...),
			[]string{"docs/architecture.md:18: `top`: in two rows",
				"docs/architecture.md:18: `top` (layer top) below `low` (layer low+leaf)" + order}},
		{"an order that differs", table(good[1], good[0], good[2], good[3], good[4]),
			[]string{"docs/architecture.md:14: `top` (layer top) below `mid` (layer mid)" + order,
				"docs/architecture.md:15: `mid/b` (layer mid) below `top` (layer top)" + order}},
		{"one folder's rows apart", table(good[0], good[1], good[2], "| `low` | |", good[3], "| `low/x` | |"),
			[]string{"docs/architecture.md:18: `low/x` (layer low+leaf) below `leaf` (layer low+leaf)" + order}},
		{"a row across folders", table(good[0], "| `mid`, `mid/a`, `low` | |", good[2], good[3], "| `low/x` | |"),
			[]string{"docs/architecture.md:14: `mid` and `low`: one row, one folder"}},
		{"a row naming nothing", table(good[0], "| mid | |"),
			[]string{"docs/architecture.md: line 14: a row names its packages in backquotes: \" mid \""}},
		{"no table", []byte("# Page\n\n" + tableHeading + "\n\nNo table.\n\n## Next\n\n| `top` | |\n"),
			[]string{"docs/architecture.md: no package table after \"## Packages, top to bottom\""}},
		{"no heading", []byte("# Page\n\n| `top` | |\n"),
			[]string{"docs/architecture.md: no package table after \"## Packages, top to bottom\""}},
	}
	for _, tt := range tests {
		if have := checkTable(tt.doc, pkgs, fixture); !slices.Equal(have, tt.want) {
			t.Errorf("%s:\nhave %q\nwant %q", tt.name, have, tt.want)
		}
	}
}

// TestArchitectureTableMatchesFolders holds docs/architecture.md's package table to this
// module's packages and its layers.
func TestArchitectureTableMatchesFolders(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	pkgs, err := listPackages("go", root)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range pkgs {
		if ours(p.ImportPath) && len(p.GoFiles)+len(p.CgoFiles) > 0 {
			paths = append(paths, rel(p.ImportPath))
		}
	}
	if len(paths) < 20 {
		t.Fatalf("go list found %d packages of ours: %q", len(paths), paths)
	}
	doc, err := os.ReadFile(filepath.Join(root, tableDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkTable(doc, paths, house) {
		t.Error(p)
	}
}
