package results

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakePart is what a test part recorded: latencies per second and decisions per key.
type fakePart struct {
	index, count int
	seed         int64
	scenario     string
	yaml         string
	lat          [][]time.Duration // per second
	keys         []KeyTally
	partless     bool // write no part record (an whole run)
	v1           bool // write a v1 summary, as an older ratelab did
	// bound and worst are the part's overspend bound (nil: none) and worst key's burst excess.
	bound    map[string]float64
	allKeys  map[string]float64 // the bound on the excess summed over keys (nil: none)
	unknown  []Unmeasured       // the bound's sources not measured
	worst    float64
	worstKey string
	faults   []Fault
	// oldSeconds writes the per-second histograms as an older ratelab did: latency-seconds.hdr
	// and a timeseries.csv without time_utc, no latency.hlog.
	oldSeconds bool
}

// loadStart is when part f's load started (t_s 0): after its summary's started_at, with a
// millisecond part.
func (f fakePart) loadStart() time.Time {
	return time.Date(2025, 6, 1, 12, 0, f.index, 0, time.UTC).Add(2*time.Second + 437*time.Millisecond)
}

// seriesWriter writes a fake part's seconds in the layout of a run of this ratelab or, with
// oldSeconds, of an older one.
type seriesWriter struct {
	sw *SeriesWriter
	ts *os.File
	tw *TimeseriesWriter
	hs *os.File
	hw *SecondsHistogramWriter
}

func (f fakePart) newSeriesWriter(t testing.TB, dir string) *seriesWriter {
	t.Helper()
	w := &seriesWriter{}
	var err error
	if !f.oldSeconds {
		if w.sw, err = CreateSeries(dir); err == nil {
			err = w.sw.Start(f.loadStart())
		}
	} else {
		w.ts, _ = os.Create(filepath.Join(dir, TimeseriesFile))
		w.hs, _ = os.Create(filepath.Join(dir, SecondsHistogramFile))
		if w.tw, err = NewTimeseriesWriter(w.ts); err == nil {
			w.hw, err = NewSecondsHistogramWriter(w.hs)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *seriesWriter) write(iv Interval, h *Histogram) error {
	if w.sw != nil {
		return w.sw.Write(iv, h)
	}
	return errors.Join(w.tw.Write(iv), w.hw.Write(int(iv.TS), h))
}

func (w *seriesWriter) end(total RequestCounts) error {
	if w.sw != nil {
		return errors.Join(w.sw.End(total), w.sw.Close())
	}
	return errors.Join(w.ts.Close(), w.hs.Close())
}

// write lays out dir as `ratelab run --part` does: summary, histograms, timeseries, tally.
func (f fakePart) write(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := NewSummary(cmpOr(f.scenario, "hot"), cmpOr(f.seed, 1), time.Date(2025, 6, 1, 12, 0, f.index, 0, time.UTC))
	if !f.partless {
		sum.Part = &Part{Index: f.index, Count: f.count}
	}
	sum.Environment = Environment{Cores: 2, Provider: "none", Mode: "local"}
	total := NewHistogram()
	sw := f.newSeriesWriter(t, dir)
	for sec, lat := range f.lat {
		h := NewHistogram()
		for _, d := range lat {
			h.Record(d)
		}
		n := int64(len(lat))
		iv := Interval{TS: float64(sec), Offered: n + 1, Sent: n, Dropped: 1, Allowed: n - n/4, Denied: n / 4,
			Overspend: 1, CentralOps: n, Faults: int64(sec % 2), P99Ms: h.QuantileMs(99), Late: 1}
		if err := sw.write(iv, h); err != nil {
			t.Fatal(err)
		}
		total.Merge(h)
		sum.Load.Completed += n
		sum.Load.Sent += n
		sum.Load.Dropped++
		sum.Load.Offered += n + 1
		sum.Load.DroppedInflight++
		sum.Outcomes.Allowed += n - n/4
		sum.Outcomes.Denied += n / 4
		sum.Overspend.Requests++
		sum.Overspend.Tokens++
		sum.Overspend.PossibleRequests += 2
		sum.Overspend.PossibleTokens += 2
		sum.Overspend.FalseDenies++
		sum.Overspend.PossibleFalseDenies += 3
		sum.Overspend.UnknownOutcomes++
		sum.Overspend.ByCause["central"]++
	}
	sum.Load.Late, sum.Load.DroppedBehind, sum.Load.LostSeconds = 2, 1, 1
	sum.Load.Dropped++ // the one dropped behind, in no row
	sum.Load.Offered++
	if err := sw.end(RunCounts(sum, total)); err != nil {
		t.Fatal(err)
	}
	sum.LatencyClamped = 1
	sum.Central = Central{Ops: 100, OpsPerS: 50, OtherOps: 7}
	sum.Nodes = []NodeStats{{Addr: "n1", Ops: 60}, {Addr: "n2", Ops: 47}}
	sum.Overspend.BurstExcess = BurstExcess{Tokens: 2 * f.worst, WorstKey: f.worstKey, WorstTokens: f.worst}
	sum.Overspend.Bound.Sources = f.bound
	sum.Overspend.Bound.Unmeasured = f.unknown
	if f.allKeys != nil {
		sum.Overspend.Bound.AllKeys = &BoundSum{Sources: f.allKeys}
	}
	sum.Overspend.JudgeBound()
	sum.Faults = f.faults
	if f.v1 {
		sum.Schema = SchemaSummaryV1
	}
	sum.DurationS = float64(len(f.lat))
	sum.Load.OfferedRPS = float64(sum.Load.Sent+sum.Load.Dropped) / sum.DurationS
	sum.Load.AchievedRPS = float64(sum.Load.Completed) / sum.DurationS
	lf, _ := os.Create(filepath.Join(dir, TallyFile))
	if err := WriteTally(lf, f.keys); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	if err := os.WriteFile(filepath.Join(dir, ScenarioFile), []byte(cmpOr(f.yaml, "name: hot\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteRunFiles(dir, sum, total); err != nil {
		t.Fatal(err)
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// seededLatencies draws n latencies per second for secs seconds: an exponential body with a
// lognormal tail, different per seed so the parts' distributions differ.
func seededLatencies(seed uint64, secs, n int, mean time.Duration) [][]time.Duration {
	rng := rand.New(rand.NewPCG(seed, 99))
	out := make([][]time.Duration, secs)
	for s := range out {
		for range n {
			d := time.Duration(rng.ExpFloat64() * float64(mean))
			if rng.IntN(100) == 0 {
				d = time.Duration(math.Exp(rng.NormFloat64()+2) * float64(time.Millisecond))
			}
			out[s] = append(out[s], d)
		}
	}
	return out
}

func exactQuantileMs(vals []time.Duration, q float64) float64 {
	s := slices.Clone(vals)
	slices.Sort(s)
	i := int(math.Ceil(q/100*float64(len(s)))) - 1
	return float64(s[max(i, 0)]) / float64(time.Millisecond)
}

// Merged percentiles are the percentiles of the union of the parts' values: exactly those of one
// histogram that recorded both parts, and within HDR precision (0.1%) of the exact quantile.
func TestMergePercentilesAreTheUnions(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := fakePart{index: 0, count: 2, lat: seededLatencies(1, 3, 20000, time.Millisecond),
		keys: []KeyTally{{"rl:{tenant-0}:read", 500, 2, 2}, {"rl:{tenant-2}:read", 100, 0, 0}}}
	b := fakePart{index: 1, count: 2, lat: seededLatencies(2, 3, 5000, 4*time.Millisecond),
		keys: []KeyTally{{"rl:{tenant-1}:read", 300, 1, 1}, {"rl:{tenant-3}:read", 100, 0, 0}}}
	a.write(t, filepath.Join(root, "s0"))
	b.write(t, filepath.Join(root, "s1"))
	out := filepath.Join(root, "merged")
	// Inputs in reverse order: the merge sorts by part index.
	sum, err := Merge(out, []string{filepath.Join(root, "s1"), filepath.Join(root, "s0")})
	if err != nil {
		t.Fatal(err)
	}

	union := NewHistogram()
	var all []time.Duration
	for _, s := range [][][]time.Duration{a.lat, b.lat} {
		for _, sec := range s {
			all = append(all, sec...)
			for _, d := range sec {
				union.Record(d)
			}
		}
	}
	// Over offered requests: the union's answered latencies and every part's drops (4 per part).
	if want, _ := LatencyOf(union, 8); sum.LatencyMs != want || sum.Load.Dropped != 8 {
		t.Errorf("merged latency over offered %+v (dropped %d); want %+v from the union and 8 drops", sum.LatencyMs, sum.Load.Dropped, want)
	}
	for _, c := range []struct {
		q    float64
		have float64
	}{{50, sum.LatencyServedMs.P50}, {90, sum.LatencyServedMs.P90}, {99, sum.LatencyServedMs.P99}, {99.9, sum.LatencyServedMs.P999}} {
		if want := union.QuantileMs(c.q); c.have != want {
			t.Errorf("merged p%v = %v ms, the union histogram's is %v", c.q, c.have, want)
		}
		if exact := exactQuantileMs(all, c.q); math.Abs(c.have-exact) > exact*1e-3+0.001 {
			t.Errorf("merged p%v = %v ms, the exact quantile of the union is %v: beyond HDR precision", c.q, c.have, exact)
		}
	}

	f, _ := os.Open(filepath.Join(out, TimeseriesFile))
	defer f.Close()
	rows, err := ReadTimeseries(f)
	if err != nil || len(rows) != 3 {
		t.Fatalf("merged timeseries: %d rows, %v; want 3", len(rows), err)
	}
	for sec, r := range rows {
		h := NewHistogram()
		vals := append(slices.Clone(a.lat[sec]), b.lat[sec]...)
		for _, d := range vals {
			h.Record(d)
		}
		if r.P99Ms != h.QuantileMs(99) || r.P999Ms != h.QuantileMs(99.9) || r.P50Ms != h.QuantileMs(50) {
			t.Errorf("second %d: merged p50/p99/p999 %v/%v/%v, union %v/%v/%v", sec, r.P50Ms, r.P99Ms, r.P999Ms,
				h.QuantileMs(50), h.QuantileMs(99), h.QuantileMs(99.9))
		}
		if r.Sent != int64(len(vals)) || r.Offered != int64(len(vals))+2 || r.Overspend != 2 {
			t.Errorf("second %d: sent %d offered %d overspend %d; want %d, %d, 2", sec, r.Sent, r.Offered, r.Overspend, len(vals), len(vals)+2)
		}
		if r.Faults != int64(sec%2) {
			t.Errorf("second %d: faults %d; want %d (every part ran the same schedule: not summed)", sec, r.Faults, sec%2)
		}
	}

	if want := int64(3 * (20000 + 5000)); sum.Load.Completed != want || sum.Outcomes.Allowed+sum.Outcomes.Denied != want {
		t.Errorf("decisions %d, allowed+denied %d; want %d", sum.Load.Completed, sum.Outcomes.Allowed+sum.Outcomes.Denied, want)
	}
	if sum.Overspend.Requests != 6 || sum.Overspend.ByCause["central"] != 6 ||
		sum.Overspend.Ratio != Ratio(6, sum.Outcomes.Allowed) {
		t.Errorf("overspend %+v; want 6 requests, ratio recomputed over %d allowed", sum.Overspend, sum.Outcomes.Allowed)
	}
	if sum.Environment.Cores != 4 || sum.Part == nil || !slices.Equal(sum.Part.Merged, []int{0, 1}) || len(sum.Part.Missing) != 0 {
		t.Errorf("environment cores %d, part %+v; want 4 cores, merged [0 1], nothing missing", sum.Environment.Cores, sum.Part)
	}
	// Hot keys come from the merged tally: tenant-0 (500 of 1000), then tenant-1 (300).
	if len(sum.HotKeys) != 4 || sum.HotKeys[0].Key != "rl:{tenant-0}:read" || sum.HotKeys[0].Share != 0.5 ||
		sum.HotKeys[1].Key != "rl:{tenant-1}:read" || sum.HotKeys[1].Share != 0.3 {
		t.Errorf("hot keys %+v; want tenant-0 (0.5) then tenant-1 (0.3)", sum.HotKeys)
	}
	// The merged directory is itself a complete run: its files read back.
	back, err := ReadSummary(filepath.Join(out, SummaryFile))
	if err != nil || back.Load.Completed != sum.Load.Completed {
		t.Errorf("merged summary.json: %v, %+v", err, back)
	}
	hf, _ := os.Open(filepath.Join(out, HistogramFile))
	defer hf.Close()
	if h, err := ReadHistogram(hf); err != nil || h.Count() != union.Count() {
		t.Errorf("merged latency.hdr.json: %v (count %v, want %d)", err, h, union.Count())
	}
	lf, _ := os.Open(filepath.Join(out, LatencyLogFile))
	defer lf.Close()
	if log, err := ReadLatencyLog(lf); err != nil || len(log.Seconds) != 3 || log.Seconds[2].Count() != 25000 || !log.Start.Equal(a.loadStart()) {
		t.Errorf("merged %s: %+v, %v; want 3 seconds, 25000 in the last, starting at part 0's %v", LatencyLogFile, log, err, a.loadStart())
	}
}

func TestMergeWarnsOnMissingPart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fakePart{index: 0, count: 3, lat: seededLatencies(1, 2, 100, time.Millisecond)}.write(t, filepath.Join(root, "s0"))
	fakePart{index: 2, count: 3, lat: seededLatencies(2, 2, 100, time.Millisecond)}.write(t, filepath.Join(root, "s2"))
	sum, err := Merge(filepath.Join(root, "m"), []string{filepath.Join(root, "s0"), filepath.Join(root, "s2")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sum.Part.Missing, []int{1}) || !strings.Contains(sum.Load.Note, "WARNING: parts 1 of 3 missing") {
		t.Errorf("missing %v, note %q; want part 1 named missing", sum.Part.Missing, sum.Load.Note)
	}
	var kinds []NoteKind
	for _, n := range sum.Load.Notes {
		kinds = append(kinds, n.Kind)
	}
	if len(kinds) < 2 || kinds[0] != NoteMerge || kinds[len(kinds)-1] != NoteSLO {
		t.Errorf("merged notes of kinds %v: want the merge's first and the SLO not re-evaluated last", kinds)
	}
}

func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	lat := seededLatencies(3, 1, 10, time.Millisecond)
	tests := []struct {
		name     string
		parts    []fakePart
		out      string // "" = a fresh directory; "s0" = the first input
		wantText string
	}{
		{"no directories", nil, "", "no run directories"},
		{"not a part", []fakePart{{partless: true, lat: lat}}, "", "not a part's run"},
		{"other scenario", []fakePart{{index: 0, count: 2, lat: lat}, {index: 1, count: 2, scenario: "cold", lat: lat}}, "", `scenario "cold"`},
		{"other seed", []fakePart{{index: 0, count: 2, lat: lat}, {index: 1, count: 2, seed: 7, lat: lat}}, "", "seed 7"},
		{"other count", []fakePart{{index: 0, count: 2, lat: lat}, {index: 1, count: 3, lat: lat}}, "", "the same count"},
		{"other scenario.yaml", []fakePart{{index: 0, count: 2, lat: lat}, {index: 1, count: 2, yaml: "name: hot\nduration: 9s\n", lat: lat}}, "", "different scenario.yaml"},
		{"overlapping parts", []fakePart{{index: 1, count: 2, lat: lat}, {index: 1, count: 2, lat: lat}}, "", "both part 1/2"},
		{"output is an input", []fakePart{{index: 0, count: 2, lat: lat}}, "s0", "is also an input"},
		{"v1 with v2", []fakePart{{index: 0, count: 2, lat: lat}, {index: 1, count: 2, lat: lat, v1: true}}, "",
			`is a ratelab.summary/v1 summary`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			var dirs []string
			for i, s := range tt.parts {
				d := filepath.Join(root, "s"+string(rune('0'+i)))
				s.write(t, d)
				dirs = append(dirs, d)
			}
			out := filepath.Join(root, "merged")
			if tt.out != "" {
				out = filepath.Join(root, tt.out)
			}
			_, err := Merge(out, dirs)
			if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Merge = %v; want ErrMerge containing %q", err, tt.wantText)
			}
			if len(dirs) > 0 && tt.out == "" && !strings.Contains(err.Error(), root) {
				t.Errorf("error %q names no directory", err)
			}
			if _, serr := os.Stat(filepath.Join(root, "merged")); serr == nil {
				t.Errorf("a refused merge wrote its output directory")
			}
		})
	}
}

// A refused input file is named: a part without the per-second histograms of this version.
func TestMergeNamesMissingFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := filepath.Join(root, "s0")
	fakePart{index: 0, count: 1, lat: seededLatencies(1, 1, 10, time.Millisecond)}.write(t, d)
	os.Remove(filepath.Join(d, LatencyLogFile))
	_, err := Merge(filepath.Join(root, "m"), []string{d})
	if err == nil || !strings.Contains(err.Error(), LatencyLogFile) || !strings.Contains(err.Error(), "rerun the part") {
		t.Errorf("Merge = %v; want an error naming %s and the fix", err, LatencyLogFile)
	}
}

func TestSecondsHistogramsRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := NewSecondsHistogramWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]*Histogram{}
	for sec, lat := range seededLatencies(5, 4, 1000, time.Millisecond) {
		h := NewHistogram()
		for _, d := range lat {
			h.Record(d)
		}
		h.Record(time.Hour) // clamped: the count survives the file
		want[sec] = h
		if err := w.Write(sec, h); err != nil {
			t.Fatal(err)
		}
	}
	have, err := ReadSecondsHistograms(bytes.NewReader(buf.Bytes()))
	if err != nil || len(have) != len(want) {
		t.Fatalf("read %d seconds, %v; want %d", len(have), err, len(want))
	}
	for sec, h := range want {
		g := have[sec]
		if g.Count() != h.Count() || g.Clamped() != 1 || g.QuantileMs(99) != h.QuantileMs(99) || g.MaxMs() != h.MaxMs() {
			t.Errorf("second %d: count %d clamped %d p99 %v; want %d, 1, %v", sec, g.Count(), g.Clamped(), g.QuantileMs(99), h.Count(), h.QuantileMs(99))
		}
	}
	// An interrupted write leaves a partial last line: the complete seconds are kept.
	cut := buf.Bytes()[:buf.Len()-10]
	have, err = ReadSecondsHistograms(bytes.NewReader(cut))
	if !errors.Is(err, ErrTruncated) || len(have) != len(want)-1 {
		t.Errorf("cut file: %d seconds, %v; want %d and ErrTruncated", len(have), err, len(want)-1)
	}
}

func TestReadSecondsHistogramsRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, have string
		want       error
	}{
		{"empty", "", ErrTruncated},
		{"other schema", "#ratelab.hdr-seconds/v9 unit=us\n", ErrSchema},
		{"other geometry", "#" + SchemaSecondsHistogram + " unit=ms lowest=1\n", ErrCorrupt},
		{"short line", secondsHeader + "\n0 1 0\n", ErrCorrupt},
		{"bad count", secondsHeader + "\n0 x 0 AAAA\n", ErrCorrupt},
		{"bad histogram", secondsHeader + "\n0 1 0 notbase64!\n", ErrCorrupt},
	}
	for _, tt := range tests {
		if _, err := ReadSecondsHistograms(strings.NewReader(tt.have)); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestTallyRoundTripAndRejects(t *testing.T) {
	t.Parallel()
	keys := []KeyTally{{"rl:{tenant-0}:read", 10, 2, 2}, {"rl:{tenant-1}:write", 3, 0, 0}}
	var buf bytes.Buffer
	if err := WriteTally(&buf, keys); err != nil {
		t.Fatal(err)
	}
	have, err := ReadTally(&buf)
	if err != nil || !slices.Equal(have, keys) {
		t.Errorf("round trip: %v, %v; want %v", have, err, keys)
	}
	if err := WriteTally(&bytes.Buffer{}, []KeyTally{{Key: "a,b", Completed: 1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a key with a comma: %v, want ErrInvalid", err)
	}
	for _, bad := range []string{"k,d\n", tallyHeader + "\nk,1,2\n", tallyHeader + "\nk,1,-2,0\n"} {
		if _, err := ReadTally(strings.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ReadTally(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}
