package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

func main() {
	root := flag.String("root", ".", "root of the module to check")
	goCmd := flag.String("go", "go", "go command that lists the module's packages")
	flag.Parse()

	problems, err := lintRepo(*goCmd, *root)
	for _, p := range problems {
		fmt.Println(p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ratelab-lint:", err)
		os.Exit(2)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "ratelab-lint: %d problems\n", len(problems))
		os.Exit(1)
	}
}

// lintRepo runs the checks over the module at root and returns every offender: sizes, then the
// layering itself, the imports, and docs/architecture.md's package table. The size problems are
// returned even when listing the packages fails.
func lintRepo(goCmd, root string) ([]string, error) {
	problems, err := checkSizes(root)
	if err != nil {
		return problems, err
	}
	pkgs, err := listPackages(goCmd, root)
	if err != nil {
		return problems, err
	}
	var paths, folders []string
	for _, p := range pkgs {
		if ours(p.ImportPath) && len(p.GoFiles)+len(p.CgoFiles) > 0 {
			paths = append(paths, rel(p.ImportPath))
			if t := top(rel(p.ImportPath)); !slices.Contains(folders, t) {
				folders = append(folders, t)
			}
		}
	}
	problems = append(problems, house.check(folders)...)
	problems = append(problems, checkImports(pkgs, house)...)
	doc, err := os.ReadFile(filepath.Join(root, tableDoc))
	if err != nil {
		return append(problems, fmt.Sprintf("%s: %v: the package table lists the layers' folders", tableDoc, err)), nil
	}
	return append(problems, checkTable(doc, paths, house)...), nil
}
