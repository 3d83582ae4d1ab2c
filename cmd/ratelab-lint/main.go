package main

import (
	"flag"
	"fmt"
	"os"
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

// lintRepo runs both checks over the module at root and returns every offender, sizes first. The
// size problems are returned even when listing the packages fails.
func lintRepo(goCmd, root string) ([]string, error) {
	problems, err := checkSizes(root)
	if err != nil {
		return problems, err
	}
	pkgs, err := listPackages(goCmd, root)
	if err != nil {
		return problems, err
	}
	return append(problems, checkImports(pkgs, layers)...), nil
}
