package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// maxSummaryBytes bounds how much of a summary file ReadSummary reads; a real summary is a few KB.
const maxSummaryBytes = 16 << 20

// WriteSummary writes s to path as indented JSON, atomically: it writes a temporary file in the
// same directory and renames it over path, so a reader sees the old file or the new one, never
// half of one. The schema is set to SchemaSummary and nil lists and maps are written as [] and {};
// s itself is not modified. A NaN or infinite number is an error naming its JSON field.
func WriteSummary(path string, s *Summary) error {
	if s == nil {
		return fmt.Errorf("write summary %s: summary is nil: %w", path, ErrInvalid)
	}
	c := *s
	c.normalize()
	if field := nonFinite(reflect.ValueOf(c), ""); field != "" {
		return fmt.Errorf("write summary %s: field %s is NaN or infinite; JSON cannot carry it, "+
			"store 0 when the quantity is undefined: %w", path, field, ErrInvalid)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<=" in check names readable; this is a file, not HTML
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return fmt.Errorf("write summary %s: %w", path, err)
	}
	return WriteFileAtomic(path, buf.Bytes())
}

// ReadSummary reads a summary written by WriteSummary. A file whose schema is not SchemaSummary
// is rejected with ErrSchema; unknown fields are ignored (newer writers may add some).
func ReadSummary(path string) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxSummaryBytes)); err != nil {
		return nil, fmt.Errorf("read summary %s: %w", path, err)
	}
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(buf.Bytes(), &head); err != nil {
		return nil, fmt.Errorf("read summary %s: not a JSON object: %v: %w", path, err, ErrCorrupt)
	}
	switch {
	case head.Schema == nil:
		return nil, fmt.Errorf("read summary %s: no \"schema\" field; want %q (is this a ratelab summary.json?): %w",
			path, SchemaSummary, ErrSchema)
	case *head.Schema != SchemaSummary:
		return nil, fmt.Errorf("read summary %s: schema %q; this ratelab reads %q only: %w",
			path, *head.Schema, SchemaSummary, ErrSchema)
	}
	s := new(Summary)
	if err := json.Unmarshal(buf.Bytes(), s); err != nil {
		return nil, fmt.Errorf("read summary %s: %v: %w", path, err, ErrCorrupt)
	}
	s.normalize()
	return s, nil
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it and renames it over path.
// The report package uses it for its outputs too.
func WriteFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	// CreateTemp makes the file 0600; results are meant to be shared like any output file.
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: chmod: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	return nil
}

// nonFinite returns the JSON path of the first NaN or infinite float64 in v, or "".
func nonFinite(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return path
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if p := nonFinite(v.Field(i), join(path, name)); p != "" {
				return p
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if p := nonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
