package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The size limits of production code.
const (
	maxFileLines = 500 // newlines in a file, as wc -l counts them
	maxFuncLines = 80  // lines from a function's func keyword to its closing brace, inclusive
)

// checkSizes walks root and returns one line per production .go file or function over its limit,
// with paths relative to root, in walk (lexical) order. An error reading the tree stops the walk.
func checkSizes(root string) ([]string, error) {
	var problems []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !isProductionGo(d.Name()) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		problems = append(problems, checkFile(filepath.ToSlash(rel), src)...)
		return nil
	})
	return problems, err
}

// skipDir reports whether the go command ignores the directory, or it holds another module.
func skipDir(path, name string) bool {
	if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// isProductionGo reports whether a file name is Go source that builds into a program: not a test,
// and not a name the go command ignores.
func isProductionGo(name string) bool {
	return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") &&
		!strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_")
}

// checkFile returns the size problems of one source file named path. A generated file has none; a
// file that does not parse is a problem of its own.
func checkFile(path string, src []byte) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return []string{fmt.Sprintf("%s: cannot parse: %v", path, err)}
	}
	if ast.IsGenerated(f) {
		return nil
	}
	var problems []string
	if n := bytes.Count(src, []byte{'\n'}); n > maxFileLines {
		problems = append(problems, fmt.Sprintf("%s: %d lines (max %d)", path, n, maxFileLines))
	}
	for _, fn := range funcSpans(fset, f) {
		if fn.lines > maxFuncLines {
			problems = append(problems, fmt.Sprintf("%s:%d: func %s is %d lines (max %d)",
				path, fn.line, fn.name, fn.lines, maxFuncLines))
		}
	}
	return problems
}

// funcSpan is where a function starts and how many lines it spans.
type funcSpan struct {
	name  string
	line  int // line of the func keyword
	lines int // func keyword to closing brace, inclusive
}

// funcSpans returns the spans of a file's functions with a body: every function and method
// declaration, and every outermost func literal in a package-level var or const. A closure inside
// a function is not a span of its own: its lines count toward the function around it, which is
// always longer.
func funcSpans(fset *token.FileSet, f *ast.File) []funcSpan {
	var spans []funcSpan
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Body != nil {
				spans = append(spans, span(fset, funcName(d), d.Pos(), d.Body.Rbrace))
			}
		case *ast.GenDecl:
			spans = append(spans, literalSpans(fset, d)...)
		}
	}
	return spans
}

// literalSpans returns the spans of the outermost func literals in a var or const declaration,
// each named after the name it initialises.
func literalSpans(fset *token.FileSet, d *ast.GenDecl) []funcSpan {
	var spans []funcSpan
	for _, s := range d.Specs {
		vs, ok := s.(*ast.ValueSpec)
		if !ok {
			continue
		}
		for i, v := range vs.Values {
			name := "literal"
			if len(vs.Names) == len(vs.Values) {
				name = vs.Names[i].Name
			}
			ast.Inspect(v, func(n ast.Node) bool {
				lit, ok := n.(*ast.FuncLit)
				if !ok {
					return true
				}
				spans = append(spans, span(fset, name+" (func literal)", lit.Pos(), lit.Body.Rbrace))
				return false
			})
		}
	}
	return spans
}

func span(fset *token.FileSet, name string, start, rbrace token.Pos) funcSpan {
	first, last := fset.Position(start).Line, fset.Position(rbrace).Line
	return funcSpan{name: name, line: first, lines: last - first + 1}
}

// funcName is a declaration's name as the report shows it: F, T.M or (*T).M, without type
// parameters.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	return recvName(d.Recv.List[0].Type) + "." + d.Name.Name
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "(*" + recvName(t.X) + ")"
	case *ast.ParenExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}
