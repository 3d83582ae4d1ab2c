package results

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestAddNote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		add       []Note
		wantNotes []Note
		wantNote  string
	}{
		{"none", nil, nil, ""},
		{"one", []Note{{NoteLag, "lag p99 1 ms"}}, []Note{{NoteLag, "lag p99 1 ms"}}, "lag p99 1 ms"},
		{"joined in order", []Note{{NoteLoad, "short"}, {NoteLeases, "leases: a; b"}, {NotePart, "part 0/2"}},
			[]Note{{NoteLoad, "short"}, {NoteLeases, "leases: a; b"}, {NotePart, "part 0/2"}}, "short; leases: a; b; part 0/2"},
		{"an empty text adds nothing", []Note{{NoteLag, "lag"}, {NotePart, ""}}, []Note{{NoteLag, "lag"}}, "lag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var l Load
			for _, n := range tt.add {
				l.AddNote(n.Kind, n.Text)
			}
			if !reflect.DeepEqual(l.Notes, tt.wantNotes) || l.Note != tt.wantNote {
				t.Errorf("notes %+v, note %q; want %+v, %q", l.Notes, l.Note, tt.wantNotes, tt.wantNote)
			}
		})
	}
}

// An older file has the joined note only: it reads as written, with no typed entries.
func TestReadSummaryV2Note(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), SummaryFile)
	v2 := `{"schema":"ratelab.summary/v2","scenario":"x","load":{"note":"schedule lag p99 0.1 ms; part 0/2"}}`
	if err := os.WriteFile(path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Load.Note != "schedule lag p99 0.1 ms; part 0/2" || s.Load.Notes != nil {
		t.Errorf("v2 note read as %q with entries %+v; want the note as written and no entries", s.Load.Note, s.Load.Notes)
	}
}
