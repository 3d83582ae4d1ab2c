// Command ratelab-lint checks the house rules that gofmt and go vet do not: the size of production
// code, the direction of imports between ratelab's packages, and the architecture page's table of
// them. `make lint` runs it from the repository root after gofmt and go vet; it prints one line
// per offender and exits 1 when there is any, 2 when it cannot check (go list fails), 0 when the
// tree is clean.
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
// Imports field: not TestImports or XTestImports, so tests may import anything) against the
// layers in layers.go, read from the folders: each top-level folder is one layer, every package
// under it belongs to it and imports only the layers below, its own ancestors in its folder, the
// packages its folder's chain puts below it, and for the few packages held to less, only what
// they are held to. A package in no layer is an error until its folder is added.
//
// The table check holds the package table of docs/architecture.md to the same folders: every
// production package in one row, no row without a package, one folder's rows together and the
// rows top to bottom in the order of the layers.
//
// ratelab-lint reports; it never edits a file, and it checks nothing outside the module.
package main
