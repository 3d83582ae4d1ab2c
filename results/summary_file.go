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
// half of one. Nil lists and maps are written as [] and {}; s itself is not modified.
//
// The file is a v4 summary (SchemaSummary), or v3 or v2 when s was read from such a file, unless s was
// read from a v1 file (s.V1()): then it is
// written back in the v1 layout with SchemaSummaryV1, v2-only fields left out, so a v1 run never
// claims the v2 definitions (see summary_v1.go). A NaN or infinite number is an error naming its
// JSON field, except the +Inf that stands for "not measurable" in a latency (Ms) or a check's
// value, written as null.
func WriteSummary(path string, s *Summary) error {
	if s == nil {
		return fmt.Errorf("write summary %s: summary is nil: %w", path, ErrInvalid)
	}
	c := *s
	c.normalize()
	var out any = &c
	if c.V1() {
		out = toV1(&c)
	}
	if field := nonFinite(reflect.ValueOf(out).Elem(), "", false); field != "" {
		return fmt.Errorf("write summary %s: field %s is NaN or infinite; JSON cannot carry it, "+
			"store 0 when the quantity is undefined (+Inf only for a latency that is not measurable): %w", path, field, ErrInvalid)
	}
	var buf bytes.Buffer
	if err := encodeJSON(&buf, out, "  "); err != nil {
		return fmt.Errorf("write summary %s: %w", path, err)
	}
	return WriteFileAtomic(path, buf.Bytes())
}

// encodeJSON writes v as JSON to buf, indented by indent when it is not empty, without escaping
// "<", ">" and "&": keep "<=" in check names readable; this is a file, not HTML.
func encodeJSON(buf *bytes.Buffer, v any, indent string) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	return enc.Encode(v)
}

// ReadSummary reads a summary written by WriteSummary: a v4, v3 or v2 file (SchemaSummary,
// SchemaSummaryV3, SchemaSummaryV2) as it is, with its schema, a v1
// file (SchemaSummaryV1) mapped into the v2 struct with Schema kept at SchemaSummaryV1 (see
// summary_v1.go for what each v1 field becomes). Any other schema is rejected with ErrSchema;
// unknown fields are ignored (newer writers may add some).
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
	s := new(Summary)
	switch {
	case head.Schema == nil:
		return nil, fmt.Errorf("read summary %s: no \"schema\" field; want %q (is this a ratelab summary.json?): %w",
			path, SchemaSummary, ErrSchema)
	case *head.Schema == SchemaSummaryV1:
		v := new(summaryV1)
		if err := json.Unmarshal(buf.Bytes(), v); err != nil {
			return nil, fmt.Errorf("read summary %s: %v: %w", path, err, ErrCorrupt)
		}
		s = fromV1(v)
	case *head.Schema == SchemaSummary, *head.Schema == SchemaSummaryV3, *head.Schema == SchemaSummaryV2:
		// v3 and v2 files have the same layout (a v2 latency's "dropped" reads as Undecided);
		// their Schema stays, so no reader takes their figures for v4's.
		if err := json.Unmarshal(buf.Bytes(), s); err != nil {
			return nil, fmt.Errorf("read summary %s: %v: %w", path, err, ErrCorrupt)
		}
	default:
		return nil, fmt.Errorf("read summary %s: schema %q; this ratelab reads %q, %q, %q and %q only: %w",
			path, *head.Schema, SchemaSummary, SchemaSummaryV3, SchemaSummaryV2, SchemaSummaryV1, ErrSchema)
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

var (
	msType    = reflect.TypeFor[Ms]()
	checkType = reflect.TypeFor[Check]()
)

// nonFinite returns the JSON path of the first NaN or infinite float64 in v, or "". +Inf is
// allowed where JSON writes it as null: in an Ms (Unmeasurable) and in a Check's value (allowInf
// for that field).
func nonFinite(v reflect.Value, path string, allowInf bool) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsInf(f, 1) && (allowInf || v.Type() == msType) {
			return ""
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return path
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			inf := t == checkType && t.Field(i).Name == "Value"
			if p := nonFinite(v.Field(i), join(path, name), inf); p != "" {
				return p
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if p := nonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i), false); p != "" {
				return p
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return nonFinite(v.Elem(), path, allowInf)
		}
	}
	return ""
}

// checkJSON is the JSON form of a Check: Value is null when it is not measurable (+Inf).
type checkJSON struct {
	Name  string   `json:"name"`
	Limit float64  `json:"limit"`
	Value *float64 `json:"value"`
	Pass  bool     `json:"pass"`
}

// MarshalJSON writes c with its value as null when it is +Inf (a latency percentile that is not
// measurable); NaN and -Inf are refused.
func (c Check) MarshalJSON() ([]byte, error) {
	j := checkJSON{Name: c.Name, Limit: c.Limit, Pass: c.Pass}
	if !math.IsInf(c.Value, 1) {
		j.Value = &c.Value
	}
	var buf bytes.Buffer
	if err := encodeJSON(&buf, j, ""); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads a check, a null value as +Inf (not measurable).
func (c *Check) UnmarshalJSON(b []byte) error {
	var j checkJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Check{Name: j.Name, Limit: j.Limit, Value: math.Inf(1), Pass: j.Pass}
	if j.Value != nil {
		c.Value = *j.Value
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
