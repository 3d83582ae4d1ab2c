package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// pkgInfo is the part of `go list -json` the import check reads.
type pkgInfo struct {
	ImportPath string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string // production imports only: test imports are in fields not read here
}

// listPackages runs `go list -json ./...` in root and decodes the packages it prints.
func listPackages(goCmd, root string) ([]pkgInfo, error) {
	cmd := exec.Command(goCmd, "list", "-json=ImportPath,GoFiles,CgoFiles,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var pkgs []pkgInfo
	for {
		var p pkgInfo
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// checkImports holds every package of the module against the layering l and returns one line
// per import l does not allow, and one per package in no layer. A package with no production
// files (tests only) imports nothing in production and is skipped.
func checkImports(pkgs []pkgInfo, l layering) []string {
	var problems []string
	for _, p := range pkgs {
		if !ours(p.ImportPath) || len(p.GoFiles)+len(p.CgoFiles) == 0 {
			continue
		}
		from := rel(p.ImportPath)
		if _, ok := l.layerOf(from); !ok {
			problems = append(problems, fmt.Sprintf(
				"%s: in no layer: add its top-level folder to the layers (cmd/ratelab-lint/layers.go) and to docs/architecture.md's package table",
				p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			if !ours(imp) {
				continue
			}
			if why := l.forbids(from, rel(imp)); why != "" {
				problems = append(problems, fmt.Sprintf("%s imports forbidden: %s -> %s (%s)",
					p.ImportPath, p.ImportPath, imp, why))
			}
		}
	}
	return problems
}

// ours reports whether an import path belongs to the module.
func ours(path string) bool {
	return path == module || strings.HasPrefix(path, module+"/")
}

// rel is an import path of the module relative to the module: "run/engine", "" for the root.
func rel(path string) string {
	if path == module {
		return ""
	}
	return strings.TrimPrefix(path, module+"/")
}
