package capacity

import (
	"encoding/json"
	"fmt"
	"os"
)

// PerPrimaryFromSweep reads capacity.json and returns one primary's rate: the knee of the
// one-primary series when there is one, else the USL's lambda (throughput of one unit), else the
// smallest series' knee divided by its primaries. The source text says which, and that a local
// sweep measures the whole machine (client and generator included), so it understates a
// dedicated Redis host.
func PerPrimaryFromSweep(path string) (float64, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", err
	}
	var res SweepResult
	if err := json.Unmarshal(b, &res); err != nil {
		return 0, "", fmt.Errorf("%s: %w", path, err)
	}
	if res.Schema != SchemaCapacity {
		return 0, "", fmt.Errorf("%s: schema %q, want %q (a file written by `ratelab capacity sweep`)", path, res.Schema, SchemaCapacity)
	}
	note := "; measured end to end on the sweep's machine, generator and client included"
	for _, s := range res.Series {
		if s.Primaries == 1 && s.Knee != nil && s.Knee.Achieved > 0 {
			return s.Knee.Achieved, fmt.Sprintf("the knee of the 1-primary %s sweep of %s in %s%s", s.Limiter, res.Scenario, path, note), nil
		}
	}
	for _, f := range res.Fits {
		if u := f.USL; u != nil && u.Lambda > 0 {
			return u.Lambda, fmt.Sprintf("the USL lambda fitted to the %s sweep of %s in %s%s", f.Limiter, res.Scenario, path, note), nil
		}
	}
	for _, s := range res.Series {
		if s.Knee != nil && s.Knee.Achieved > 0 {
			r := s.Knee.Achieved / float64(s.Primaries)
			return r, fmt.Sprintf("the %d-primary knee of %s in %s divided by %d (assumes linear scaling)%s", s.Primaries, res.Scenario, path, s.Primaries, note), nil
		}
	}
	return 0, "", fmt.Errorf("%s: no series has a knee (no step met the SLO); sweep lower rates or pass --per-primary-rps", path)
}
