package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Builtin returns the built-in scenario called name.
func Builtin(name string) (*Spec, error) {
	data, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("no built-in scenario %q (have: %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	return Parse("builtin:"+name, data)
}

// BuiltinYAML returns the embedded YAML of a built-in scenario, as written.
func BuiltinYAML(name string) ([]byte, error) {
	data, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("no built-in scenario %q (have: %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	return data, nil
}

// BuiltinNames lists the built-in scenarios, sorted.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtinFS, "builtin")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}
