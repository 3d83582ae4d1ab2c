package results

import "strings"

// NoteKind names what one entry of Load.Notes is about, so a reader can pick the entries it
// wants (a CI job the generator's, a report the faults') without matching their words.
type NoteKind string

// The kinds of note a run's producers add.
const (
	NoteLoad       NoteKind = "load"        // the generator fell short of the offered rate
	NoteLate       NoteKind = "late"        // decisions answered after the run's window
	NoteRows       NoteKind = "rows"        // per-second rows written out of order
	NoteDrops      NoteKind = "drops"       // requests dropped, by cause
	NoteLag        NoteKind = "lag"         // the schedule lag
	NoteStart      NoteKind = "start"       // a run that waited for its start time (--start-at)
	NoteStages     NoteKind = "stages"      // a duration that differs from the stages' total
	NoteTrace      NoteKind = "trace"       // the schedule recorded to a trace
	NoteReplay     NoteKind = "replay"      // the trace a run replayed
	NoteLeases     NoteKind = "leases"      // what the lease layer did
	NoteTariffs    NoteKind = "tariffs"     // the tariff versions a run used
	NoteTwoTier    NoteKind = "two-tier"    // the long quota of a two-tier limiter
	NoteExternal   NoteKind = "external"    // an external cluster's key prefix and cleanup
	NotePart       NoteKind = "part"        // what a part's numbers are a part of
	NoteVia        NoteKind = "via"         // the HTTP gateways of a via: http run
	NoteTokensBack NoteKind = "tokens-back" // why tokens back could not be counted
	NoteDriver     NoteKind = "driver"      // how a black-box attack sent and timed requests
	NotePolicy     NoteKind = "policy"      // the policy a black-box attack judged against
	NoteJudge      NoteKind = "judge"       // how a black-box attack judged overspend
	NoteHonesty    NoteKind = "honesty"     // how far header honesty was judged
	NoteKeys       NoteKind = "keys"        // responses not tied to their tenant
	NoteMerge      NoteKind = "merge"       // how a merge combined its parts, and its warnings
	NoteParts      NoteKind = "parts"       // one merged part's own note
	NoteSLO        NoteKind = "slo"         // SLO checks that were not re-evaluated
)

// Note is one entry of Load.Notes: what it is about and what it says.
type Note struct {
	Kind NoteKind `json:"kind"`
	Text string   `json:"text"`
}

// noteSep separates the entries of Load.Notes in Load.Note.
const noteSep = "; "

// AddNote appends an entry of kind to l.Notes and keeps l.Note their joined text: the one place
// the text readers show (report, compare, CI) is derived from the list.
func (l *Load) AddNote(kind NoteKind, text string) {
	if text == "" {
		return
	}
	l.Notes = append(l.Notes, Note{Kind: kind, Text: text})
	parts := make([]string, len(l.Notes))
	for i, n := range l.Notes {
		parts[i] = n.Text
	}
	l.Note = strings.Join(parts, noteSep)
}
