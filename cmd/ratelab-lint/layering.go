package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A layering is the import direction of a module, read from its folders. Paths in it are
// relative to the module ("run/engine"); a folder stands for its package and every package under
// it.
type layering struct {
	// layers are the layers bottom up, each one or more top-level folders. A package belongs to
	// the layer of its top-level folder and may import the packages of the layers below it; the
	// folders of one layer are peers and import nothing of each other.
	layers [][]string
	// chains are the imports inside one layer beyond a package's own ancestors: each chain lists
	// packages of one folder bottom up, and each may import those before it.
	chains [][]string
	// only holds the packages in or under a folder to these folders among those of the layers
	// below it.
	only map[string][]string
}

// top is the first element of a relative path: the folder that names its layer.
func top(path string) string {
	t, _, _ := strings.Cut(path, "/")
	return t
}

// under reports whether path is folder or lies under it.
func under(path, folder string) bool {
	return path == folder || strings.HasPrefix(path, folder+"/")
}

// layerOf returns the index in l.layers of the layer path belongs to.
func (l layering) layerOf(path string) (int, bool) {
	if path == "" {
		return 0, false
	}
	for i, folders := range l.layers {
		if slices.Contains(folders, top(path)) {
			return i, true
		}
	}
	return 0, false
}

// forbids returns why a production import of package to by package from breaks l, or "" when l
// allows it. Both are paths relative to the module, and from is in a layer.
func (l layering) forbids(from, to string) string {
	lf, _ := l.layerOf(from)
	lt, ok := l.layerOf(to)
	switch {
	case !ok:
		return to + " is in no layer"
	case top(from) == top(to):
		if under(from, to) || l.chained(from, to) {
			return ""
		}
		return fmt.Sprintf("inside %s a package imports only its ancestors, or what its chain puts below it", top(from))
	case lt == lf:
		return fmt.Sprintf("%s and %s are peers in one layer", top(from), top(to))
	case lt > lf:
		return fmt.Sprintf("layer %s is above layer %s", l.name(lt), l.name(lf))
	}
	for _, k := range slices.Sorted(maps.Keys(l.only)) {
		if under(from, k) && !slices.ContainsFunc(l.only[k], func(o string) bool { return under(to, o) }) {
			return fmt.Sprintf("%s may import only %s", k, strings.Join(l.only[k], ", "))
		}
	}
	return ""
}

// chained reports whether one of l's chains puts to below from.
func (l layering) chained(from, to string) bool {
	for _, c := range l.chains {
		i := slices.IndexFunc(c, func(p string) bool { return under(from, p) })
		j := slices.IndexFunc(c, func(p string) bool { return under(to, p) })
		if i >= 0 && j >= 0 && j < i {
			return true
		}
	}
	return false
}

// name is a layer as a problem line cites it: its folders.
func (l layering) name(i int) string { return strings.Join(l.layers[i], "+") }

// check returns one line per way l is malformed: a folder in two layers or none that exists, a
// chain across folders or in a folder no layer holds, an only-list that is not below its folder.
// folders are the top-level folders that hold a package of the module.
func (l layering) check(folders []string) []string {
	var problems []string
	seen := map[string]bool{}
	for _, layer := range l.layers {
		for _, f := range layer {
			if seen[f] || strings.Contains(f, "/") {
				problems = append(problems, fmt.Sprintf("layers: %q: a top-level folder, once", f))
			}
			seen[f] = true
			if !slices.Contains(folders, f) {
				problems = append(problems, fmt.Sprintf("layers: folder %s holds no package: drop it from the layers (cmd/ratelab-lint/layers.go)", f))
			}
		}
	}
	for _, c := range l.chains {
		for _, p := range c {
			if _, ok := l.layerOf(p); !ok || top(p) != top(c[0]) {
				problems = append(problems, fmt.Sprintf("chains: %s: every package of a chain in one folder of the layers", p))
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(l.only)) {
		lf, ok := l.layerOf(f)
		for _, o := range l.only[f] {
			if lo, okO := l.layerOf(o); !ok || !okO || lo >= lf {
				problems = append(problems, fmt.Sprintf("only: %s -> %s: a folder of a layer below %s's", f, o, f))
			}
		}
	}
	return problems
}
