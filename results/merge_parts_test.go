package results

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPartDirs(t *testing.T) {
	t.Parallel()
	lat := [][]time.Duration{{time.Millisecond}}
	layout := func(t *testing.T, parts map[string]fakePart) string {
		root := t.TempDir()
		for name, p := range parts {
			p.lat = lat
			p.write(t, filepath.Join(root, name))
		}
		return root
	}
	three := func(names ...string) map[string]fakePart {
		m := map[string]fakePart{}
		for i, n := range names {
			m[n] = fakePart{index: i, count: 3}
		}
		return m
	}
	t.Run("all", func(t *testing.T) {
		t.Parallel()
		root := layout(t, three("part-0", "part-1", "part-2"))
		// Not parts, not matched: the merged run and a stray file.
		if err := os.WriteFile(filepath.Join(root, "part-notes"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, arg := range []string{root, filepath.Join(root, "part-*")} {
			have, err := PartDirs(arg)
			if err != nil {
				t.Fatalf("PartDirs(%s): %v", arg, err)
			}
			for i, d := range have {
				if want := filepath.Join(root, "part-"+strconv.Itoa(i)); d != want {
					t.Errorf("PartDirs(%s)[%d] = %s, want %s", arg, i, d, want)
				}
			}
		}
	})
	for _, tc := range []struct {
		name    string
		parts   map[string]fakePart
		running string // a part directory without its summary yet
		wantErr string
		// incomplete: time may cure it (merge --wait retries), as opposed to a set that is wrong
		incomplete bool
	}{
		{"missing", map[string]fakePart{"part-0": {index: 0, count: 3}, "part-2": {index: 2, count: 3}}, "", "parts [1] of 3 missing", true},
		{"running", map[string]fakePart{"part-0": {index: 0, count: 2}}, "part-1", "part-1 has no summary.json yet", true},
		{"duplicate", map[string]fakePart{"part-0": {index: 0, count: 2}, "part-1": {index: 1, count: 2}, "part-1b": {index: 1, count: 2}}, "", "part 1/2 twice", false},
		{"counts", map[string]fakePart{"part-0": {index: 0, count: 2}, "part-1": {index: 1, count: 3}}, "", "share N", false},
		{"whole run", map[string]fakePart{"part-0": {partless: true}}, "", "not a part's run", false},
		{"none", map[string]fakePart{"merged": {index: 0, count: 1}}, "", "no part directories", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := layout(t, tc.parts)
			if tc.running != "" {
				if err := os.Mkdir(filepath.Join(root, tc.running), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			_, err := PartDirs(root)
			if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--parts "+root) {
				t.Errorf("PartDirs: %v, want ErrMerge naming --parts %s and %q", err, root, tc.wantErr)
			}
			if errors.Is(err, ErrPartsIncomplete) != tc.incomplete {
				t.Errorf("PartDirs: %v: incomplete %v, want %v", err, errors.Is(err, ErrPartsIncomplete), tc.incomplete)
			}
		})
	}
}

// Parts whose loads started apart are merged with a warning; with one start, none.
func TestMergeWarnsOnStartSkew(t *testing.T) {
	t.Parallel()
	lat := [][]time.Duration{{time.Millisecond}, {2 * time.Millisecond}}
	root := t.TempDir()
	var dirs []string
	for i := range 2 {
		d := filepath.Join(root, "part-"+strconv.Itoa(i))
		fakePart{index: i, count: 2, lat: lat}.write(t, d)
		dirs = append(dirs, d)
	}
	sum, err := Merge(filepath.Join(root, "merged"), dirs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.Load.Note, "WARNING: the parts' loads started 1s apart") {
		t.Errorf("note %q: want a warning that the parts started 1s apart", sum.Load.Note)
	}
	runs := []*partRun{{start: time.Unix(100, 0)}, {start: time.Unix(100, 0)}, {}}
	if n := startSkewNote(runs); n != "" {
		t.Errorf("equal starts: note %q, want none", n)
	}
}
