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

// checkImports holds every package of the module against table and returns one line per import
// the package's row does not allow, and one per package no row matches. A package with no
// production files (tests only) imports nothing in production and is skipped.
func checkImports(pkgs []pkgInfo, table []layerRule) []string {
	var problems []string
	for _, p := range pkgs {
		if !ours(p.ImportPath) || len(p.GoFiles)+len(p.CgoFiles) == 0 {
			continue
		}
		rule, ok := ruleFor(table, p.ImportPath)
		if !ok {
			problems = append(problems, fmt.Sprintf(
				"%s: no row of the layer table matches it: add it to the layer table (cmd/ratelab-lint/layers.go)",
				p.ImportPath))
			continue
		}
		for _, imp := range p.Imports {
			if ours(imp) && !rule.allows(imp) {
				problems = append(problems, fmt.Sprintf("%s imports forbidden: %s -> %s (%s)",
					p.ImportPath, p.ImportPath, imp, rule))
			}
		}
	}
	return problems
}

// ours reports whether an import path belongs to the module.
func ours(path string) bool {
	return path == module || strings.HasPrefix(path, module+"/")
}

// ruleFor returns the row of table that matches pkg most closely: an exact pattern before any
// "/..." pattern, a longer "/..." pattern before a shorter one.
func ruleFor(table []layerRule, pkg string) (layerRule, bool) {
	best, bestScore := layerRule{}, -1
	for _, r := range table {
		if !match(r.pkg, pkg) {
			continue
		}
		score := 2 * len(strings.TrimSuffix(r.pkg, "/..."))
		if !strings.HasSuffix(r.pkg, "/...") {
			score++
		}
		if score > bestScore {
			best, bestScore = r, score
		}
	}
	return best, bestScore >= 0
}

// match reports whether an import path matches a pattern: "x" matches x only, "x/..." matches x
// and every path under it.
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func (r layerRule) allows(imp string) bool {
	for _, a := range r.allow {
		if match(a, imp) {
			return true
		}
	}
	return false
}

// String is the rule as a problem line cites it, with the module prefix left off.
func (r layerRule) String() string {
	if len(r.allow) == 0 {
		return "rule " + short(r.pkg) + ": imports nothing of ours"
	}
	names := make([]string, len(r.allow))
	for i, a := range r.allow {
		names[i] = short(a)
	}
	return "rule " + short(r.pkg) + ": may import only " + strings.Join(names, ", ")
}

func short(pattern string) string {
	if s, ok := strings.CutPrefix(pattern, module+"/"); ok {
		return s
	}
	return pattern
}
