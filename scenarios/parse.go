package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse decodes a scenario strictly (unknown fields are errors), applies defaults and validates it.
// name is used in error messages (a file name or "builtin:hot-tenant").
func Parse(name string, data []byte) (*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, withLines(name, data, err)
	}
	return &s, nil
}

// FieldError is one invalid value: the field's path (e.g. "endpoints[1].weight"), the value and
// the fix.
type FieldError struct {
	Field, Value, Fix string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Value + ": " + e.Fix }

// withLines prefixes each field error with "name:line: " where the field is written in data (or
// just "name: " for a default that was not written).
func withLines(name string, data []byte, err error) error {
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	var out []error
	for _, e := range unjoin(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			if line := lineOf(&root, fe.Field); line > 0 {
				out = append(out, fmt.Errorf("%s:%d: %w", name, line, e))
				continue
			}
		}
		out = append(out, fmt.Errorf("%s: %w", name, e))
	}
	return errors.Join(out...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// lineOf finds the line of a field path such as "load.rate" or "faults[2].at" in a YAML document,
// or of its nearest written parent; 0 when nothing of it is written.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			name = part[:i]
			idx, _ = strconv.Atoi(part[i+1 : len(part)-1])
		}
		next := (*yaml.Node)(nil)
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == name {
					next, line = n.Content[i+1], n.Content[i].Line
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n, line = n.Content[idx], n.Content[idx].Line
		}
	}
	return line
}

// LoadFile reads and parses a scenario file.
func LoadFile(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := s.resolveFiles(path, data); err != nil {
		return nil, err
	}
	if err := s.resolveTrace(path); err != nil {
		return nil, err
	}
	return s, nil
}

// Resolve loads a scenario by built-in name or by file path. A name that is an existing file wins.
func Resolve(nameOrFile string) (*Spec, error) {
	if st, err := os.Stat(nameOrFile); err == nil && !st.IsDir() {
		return LoadFile(nameOrFile)
	}
	if strings.ContainsAny(nameOrFile, "/\\") || strings.HasSuffix(nameOrFile, ".yaml") || strings.HasSuffix(nameOrFile, ".yml") {
		return nil, fmt.Errorf("scenario file %s: not found", nameOrFile)
	}
	return Builtin(nameOrFile)
}
