package scenarios

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFaultTestsRunAlone keeps the Makefile's FAULT_TESTS equal to the tests that run faults
// (those whose body calls runFaults or runFaultsIn). `make test` runs that list alone, after the
// other packages; a fault test left off it would run beside them and time a starved machine,
// and a name on it that runs no faults would lose nothing but run late.
func TestFaultTestsRunAlone(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^FAULT_TESTS := \^\(([^)]*)\)\$\$$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no line `FAULT_TESTS := ^(TestA|TestB)$$`")
	}
	listed := strings.Split(string(m[1]), "|")
	slices.Sort(listed)

	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var faulty []string
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			if callsAny(fn.Body, "runFaults", "runFaultsIn") {
				faulty = append(faulty, fn.Name.Name)
			}
		}
	}
	slices.Sort(faulty)
	if !slices.Equal(listed, faulty) {
		t.Errorf("Makefile FAULT_TESTS lists\n  %v\nthe tests that run faults are\n  %v\nmake the list match", listed, faulty)
	}
}

// callsAny says whether body calls (directly or in a closure) a function named one of names.
func callsAny(body ast.Node, names ...string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && slices.Contains(names, id.Name) {
				found = true
			}
		}
		return !found
	})
	return found
}
