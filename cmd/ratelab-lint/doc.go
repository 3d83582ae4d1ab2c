// Command ratelab-lint checks the house rules that gofmt and go vet do not: the size of production
// code and the direction of imports between ratelab's packages. `make lint` runs it from the
// repository root after gofmt and go vet; it prints one line per offender and exits 1 when there
// is any, 2 when it cannot check (go list fails), 0 when the tree is clean.
//
// The size check parses every production .go file under the root (go/parser, go/ast and token
// positions): no file over 500 lines (newlines, as wc -l counts them) and no function over 80
// lines, from its func keyword to its closing brace inclusive. A method is named (*T).M or T.M; a
// closure counts as lines of the function around it; a func literal outside any function (a
// package-level var) is checked on its own. Test files (_test.go), generated files (a
// "// Code generated ... DO NOT EDIT." comment before the package clause) and the directories the
// go command ignores (testdata, vendor, names starting with . or _, nested modules) are exempt.
//
// The import check reads `go list -json ./...` and holds each package's production imports (the
// Imports field: not TestImports or XTestImports, so tests may import anything) against the layer
// table in layers.go, which says per package pattern which of the module's packages it may import.
// A package of the module that no row matches is an error until it is added to the table.
//
// ratelab-lint reports; it never edits a file, and it checks nothing outside the module.
package main
