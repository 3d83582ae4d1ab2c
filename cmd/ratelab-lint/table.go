package main

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// tableDoc is the page whose package table checkTable holds to the folders, and tableHeading the
// heading of the section the table opens.
const (
	tableDoc     = "docs/architecture.md"
	tableHeading = "## Packages, top to bottom"
)

// codeSpan is a `name` in a table cell.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// tableRow is one row of the package table: the packages its first cell names, in backquotes.
type tableRow struct {
	line int
	pkgs []string
}

// checkTable holds the package table of doc (tableDoc's text) to the module's packages pkgs
// (paths relative to the module, those with production files) and to the layering l. It returns
// one line per disagreement: a package with no row, a row naming no package of the module, a
// package in two rows, a row across two folders, and a row below a row of a lower layer (the
// table reads top to bottom, the layers bottom up) or apart from its folder's other rows.
func checkTable(doc []byte, pkgs []string, l layering) []string {
	rows, err := tableRows(doc)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", tableDoc, err)}
	}
	var problems []string
	add := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: ", tableDoc, line)+fmt.Sprintf(format, args...))
	}
	listed := map[string]bool{}
	prevLayer, prevTop := len(l.layers), ""
	done := map[string]bool{} // folders whose rows ended
	for _, r := range rows {
		for _, p := range r.pkgs {
			switch {
			case !slices.Contains(pkgs, p):
				add(r.line, "`%s`: no such package in the module: drop the row or fix the path", p)
			case listed[p]:
				add(r.line, "`%s`: in two rows", p)
			case top(p) != top(r.pkgs[0]):
				add(r.line, "`%s` and `%s`: one row, one folder", r.pkgs[0], p)
			}
			listed[p] = true
		}
		t := top(r.pkgs[0])
		layer, ok := l.layerOf(t)
		if !ok {
			continue // the import check names the package's missing layer
		}
		if t != top(prevTop) {
			if layer > prevLayer || done[t] {
				add(r.line, "`%s` (layer %s) below `%s` (layer %s): the rows run top to bottom, one folder's rows together, in the order of the layers (cmd/ratelab-lint/layers.go)",
					r.pkgs[0], l.name(layer), prevTop, l.name(prevLayer))
			}
			done[top(prevTop)] = true
		}
		prevLayer, prevTop = layer, r.pkgs[0]
	}
	for _, p := range pkgs {
		if !listed[p] {
			problems = append(problems, fmt.Sprintf("%s: package `%s` has no row in the package table (%q)", tableDoc, p, tableHeading))
		}
	}
	return problems
}

// tableRows returns the rows of the first table after tableHeading, header and rule left out. A
// row whose first cell names nothing in backquotes is an error.
func tableRows(doc []byte) ([]tableRow, error) {
	sc := bufio.NewScanner(bytes.NewReader(doc))
	line, in, started := 0, false, false
	var rows []tableRow
scan:
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case !in:
			in = text == tableHeading
			continue
		case strings.HasPrefix(text, "#"):
			break scan // the section ends
		case !strings.HasPrefix(text, "|"):
			if started {
				break scan
			}
			continue
		}
		if !started { // the header; the rule follows
			started = true
			sc.Scan()
			line++
			continue
		}
		first := strings.Split(text, "|")[1]
		var r tableRow
		for _, m := range codeSpan.FindAllStringSubmatch(first, -1) {
			r.pkgs = append(r.pkgs, m[1])
		}
		if len(r.pkgs) == 0 {
			return nil, fmt.Errorf("line %d: a row names its packages in backquotes: %q", line, first)
		}
		r.line = line
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !started {
		return nil, fmt.Errorf("no package table after %q", tableHeading)
	}
	return rows, nil
}
