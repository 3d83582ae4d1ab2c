package compare

import (
	"encoding/json"
	"io"
	"math"
)

// ReportJSON is a Report as `ratelab compare -o json` prints it. A number that is not finite (a
// latency percentile that is not measurable, a delta from zero) is null.
type ReportJSON struct {
	Base       SetJSON   `json:"base"`
	New        SetJSON   `json:"new"`
	Alpha      float64   `json:"alpha"`
	Confidence float64   `json:"confidence"`
	MinRuns    int       `json:"min_runs"`
	NoVerdict  bool      `json:"no_verdict"`
	Regressed  bool      `json:"regressed"`
	Notes      []string  `json:"notes"`
	Rows       []RowJSON `json:"rows"`
}

// SetJSON is one side: the paths it was loaded from, its runs' directories and what was left out.
type SetJSON struct {
	Paths   []string `json:"paths"`
	Runs    []string `json:"runs"`
	Skipped []string `json:"skipped"`
	Schema  string   `json:"schema"`
}

// RowJSON is one metric's comparison.
type RowJSON struct {
	Metric        string     `json:"metric"`
	Unit          string     `json:"unit"`
	HigherIsWorse bool       `json:"higher_is_worse"`
	Base          []*float64 `json:"base"`
	New           []*float64 `json:"new"`
	BaseMedian    *float64   `json:"base_median"`
	BaseLo        *float64   `json:"base_lo"`
	BaseHi        *float64   `json:"base_hi"`
	NewMedian     *float64   `json:"new_median"`
	NewLo         *float64   `json:"new_lo"`
	NewHi         *float64   `json:"new_hi"`
	DeltaPct      *float64   `json:"delta_pct"`
	Delta         *float64   `json:"delta"`
	P             *float64   `json:"p"`
	Threshold     string     `json:"threshold"`
	Verdict       Verdict    `json:"verdict"`
}

// JSON is r in the form of ReportJSON.
func (r *Report) JSON() ReportJSON {
	out := ReportJSON{Base: setJSON(r.Base), New: setJSON(r.New), Alpha: r.Options.Alpha, Confidence: r.Options.Confidence,
		MinRuns: r.MinRuns, NoVerdict: r.NoVerdict, Regressed: r.Regressed(), Notes: r.Notes, Rows: []RowJSON{}}
	if out.Notes == nil {
		out.Notes = []string{}
	}
	for _, row := range r.Rows {
		out.Rows = append(out.Rows, RowJSON{
			Metric: row.Metric.Name, Unit: row.Metric.Unit, HigherIsWorse: row.Metric.HigherIsWorse,
			Base: finites(row.Base), New: finites(row.New),
			BaseMedian: finite(row.BaseMedian), BaseLo: finite(row.BaseLo), BaseHi: finite(row.BaseHi),
			NewMedian: finite(row.NewMedian), NewLo: finite(row.NewLo), NewHi: finite(row.NewHi),
			DeltaPct: finite(row.DeltaPct), Delta: finite(row.Delta), P: finite(row.P),
			Threshold: row.Threshold.String(), Verdict: row.Verdict,
		})
	}
	return out
}

// WriteJSON writes r.JSON() as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.JSON())
}

func setJSON(s *Set) SetJSON {
	out := SetJSON{Paths: s.Paths, Runs: []string{}, Skipped: s.Skipped, Schema: s.Schema}
	for _, r := range s.Runs {
		out.Runs = append(out.Runs, r.Dir)
	}
	if out.Skipped == nil {
		out.Skipped = []string{}
	}
	return out
}

// finite is &v, or nil when v is not a finite number (JSON has no infinity).
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

func finites(vs []float64) []*float64 {
	out := make([]*float64, len(vs))
	for i, v := range vs {
		out[i] = finite(v)
	}
	return out
}
