package results

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// mergeParts writes parts into a temporary directory and merges them.
func mergeParts(t *testing.T, parts ...fakePart) (*Summary, string) {
	t.Helper()
	root := t.TempDir()
	var dirs []string
	for i, p := range parts {
		d := filepath.Join(root, "s"+string(rune('0'+i)))
		p.write(t, d)
		dirs = append(dirs, d)
	}
	out := filepath.Join(root, "merged")
	sum, err := Merge(out, dirs)
	if err != nil {
		t.Fatal(err)
	}
	return sum, out
}

// The v2 counts add across parts; ratios and node shares are recomputed from the totals.
func TestMergeSumsV2Fields(t *testing.T) {
	t.Parallel()
	lat := seededLatencies(4, 2, 100, time.Millisecond)
	sum, out := mergeParts(t, fakePart{index: 0, count: 2, lat: lat}, fakePart{index: 1, count: 2, lat: lat})
	f, err := os.Open(filepath.Join(out, TimeseriesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ReadTimeseries(f)
	if err != nil || len(rows) != 2 || rows[0].Late != 2 || rows[0].DroppedShare() != Ratio(2, 202) {
		t.Errorf("merged rows %+v, %v; want late 2 and dropped share 2/202 per second", rows, err)
	}
	l := sum.Load
	// Per part: 2 seconds of 101 offered (1 dropped in flight each), plus 1 dropped behind.
	if l.Offered != 2*203 || l.Late != 4 || l.Dropped != 6 || l.DroppedInflight != 4 || l.DroppedBehind != 2 || l.LostSeconds != 2 {
		t.Errorf("load %+v; want offered 406, late 4, dropped 6 (4 in flight, 2 behind), lost seconds 2", l)
	}
	if sum.LatencyClamped != 2 || sum.Central.Ops != 200 || sum.Central.OtherOps != 14 || sum.Central.OpsPerS != 100 {
		t.Errorf("clamped %d, central %+v; want 2, ops 200, other 14, 100/s", sum.LatencyClamped, sum.Central)
	}
	o := sum.Overspend
	through, denied := sum.Outcomes.Allowed+sum.Outcomes.FailedOpen, sum.Outcomes.Denied+sum.Outcomes.FailedClosed
	if o.Requests != 4 || o.PossibleRequests != 8 || o.PossibleTokens != 8 || o.FalseDenies != 4 || o.PossibleFalseDenies != 12 ||
		o.UnknownOutcomes != 4 || o.Ratio != Ratio(4, through) || o.PossibleRatio != Ratio(8, through) ||
		o.FalseDenyRatio != Ratio(4, denied) || o.PossibleFalseDenyRatio != Ratio(12, denied) {
		t.Errorf("overspend %+v; want confirmed and possible summed, ratios over %d let through and %d denied", o, through, denied)
	}
	if len(sum.Nodes) != 2 || sum.Nodes[0].Ops != 120 || sum.Nodes[0].Share != Ratio(120, 214) {
		t.Errorf("nodes %+v; want n1 with 120 of the nodes' 214 ops", sum.Nodes)
	}
	if o.Bound.Within != nil || len(o.Bound.Sources) != 0 {
		t.Errorf("bound %+v; no part had one", o.Bound)
	}
}

// Bounds are per key and the parts' keys disjoint: the merged bound is the largest part's, never
// the sum, and within is judged part by part.
func TestMergeBound(t *testing.T) {
	t.Parallel()
	lat := seededLatencies(5, 1, 10, time.Millisecond)
	part := func(i int, bound map[string]float64, worst float64) fakePart {
		return fakePart{index: i, count: 2, lat: lat, bound: bound, worst: worst, worstKey: "rl:{t" + string(rune('0'+i)) + "}:read"}
	}
	tests := []struct {
		name     string
		a, b     fakePart
		tokens   float64
		parts    map[string]float64
		within   *bool
		worst    float64
		worstKey string
	}{
		{"both within", part(0, map[string]float64{BoundLeases: 10}, 4), part(1, map[string]float64{BoundLeases: 12, BoundReplicationGap: 3}, 14),
			15, map[string]float64{BoundLeases: 12, BoundReplicationGap: 3}, ptr(true), 14, "rl:{t1}:read"},
		// Part 0 broke its own bound of 5; part 1's larger bound of 20 must not hide it.
		{"one part beyond its own bound", part(0, map[string]float64{BoundLeases: 5}, 8), part(1, map[string]float64{BoundLeases: 20}, 1),
			20, map[string]float64{BoundLeases: 20}, ptr(false), 8, "rl:{t0}:read"},
		{"one part without a bound", part(0, nil, 30), part(1, map[string]float64{BoundReplicationGap: 6}, 2),
			6, map[string]float64{BoundReplicationGap: 6}, ptr(true), 30, "rl:{t0}:read"},
		{"no bound anywhere", part(0, nil, 3), part(1, nil, 2), 0, map[string]float64{}, nil, 3, "rl:{t0}:read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sum, out := mergeParts(t, tt.a, tt.b)
			o := sum.Overspend
			if o.Bound.Tokens != tt.tokens || !reflect.DeepEqual(o.Bound.Sources, tt.parts) || !reflect.DeepEqual(o.Bound.Within, tt.within) {
				t.Errorf("bound %+v (within %v); want %v tokens, parts %v, within %v", o.Bound, deref(o.Bound.Within), tt.tokens, tt.parts, deref(tt.within))
			}
			if o.BurstExcess.WorstTokens != tt.worst || o.BurstExcess.WorstKey != tt.worstKey || o.BurstExcess.Tokens != 2*(tt.a.worst+tt.b.worst) {
				t.Errorf("burst excess %+v; want worst %s %v, sum of sums %v", o.BurstExcess, tt.worstKey, tt.worst, 2*(tt.a.worst+tt.b.worst))
			}
			back, err := ReadSummary(filepath.Join(out, SummaryFile))
			if err != nil || !reflect.DeepEqual(back.Overspend.Bound, o.Bound) {
				t.Errorf("merged summary.json bound %+v, %v; want %+v", back.Overspend.Bound, err, o.Bound)
			}
		})
	}
}

// A part's unmeasured source leaves the merged verdict undetermined unless a part broke its
// bound; every part's reasons are kept, named by part; the bound on the excess summed over
// keys adds over the parts (their keys are disjoint) and is judged part by part.
func TestMergeBoundUnmeasured(t *testing.T) {
	t.Parallel()
	lat := seededLatencies(5, 1, 10, time.Millisecond)
	gapUnread := []Unmeasured{{Source: BoundReplicationGap, Reason: "kill-primary of n1: replica n2: INFO replication: i/o timeout"}}
	a := fakePart{index: 0, count: 2, lat: lat, bound: map[string]float64{BoundLeases: 10}, allKeys: map[string]float64{BoundLeases: 30}, worst: 12, worstKey: "rl:{t0}:read", unknown: gapUnread}
	b := fakePart{index: 1, count: 2, lat: lat, bound: map[string]float64{BoundLeases: 8}, allKeys: map[string]float64{BoundLeases: 16}, worst: 3, worstKey: "rl:{t1}:read"}
	sum, out := mergeParts(t, a, b)
	bd := sum.Overspend.Bound
	wantUnknown := []Unmeasured{{Source: BoundReplicationGap, Reason: "[part 0] " + gapUnread[0].Reason}}
	if bd.Tokens != 10 || bd.Within != nil || !reflect.DeepEqual(bd.Unmeasured, wantUnknown) {
		t.Errorf("bound %+v (within %v); want 10 tokens, within undetermined (part 0's 12 is beyond its measured 10, its gap unread), reasons %v", bd, deref(bd.Within), wantUnknown)
	}
	// Part 0's sum over keys (24) is within its 30, part 1's (6) within its 16.
	if bd.AllKeys == nil || bd.AllKeys.Tokens != 46 || !reflect.DeepEqual(bd.AllKeys.Within, ptr(true)) {
		t.Errorf("all keys %+v; want 46 tokens, within", bd.AllKeys)
	}
	back, err := ReadSummary(filepath.Join(out, SummaryFile))
	if err != nil || !reflect.DeepEqual(back.Overspend.Bound, bd) {
		t.Errorf("merged summary.json bound %+v, %v; want %+v", back.Overspend.Bound, err, bd)
	}
}

func ptr[T any](v T) *T { return &v }

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// Parts read from v1 files merge by v1's definitions into a v1 summary that says so.
func TestMergeV1Parts(t *testing.T) {
	t.Parallel()
	a := fakePart{index: 0, count: 2, lat: seededLatencies(6, 2, 500, time.Millisecond), v1: true, bound: map[string]float64{BoundLeases: 10}}
	b := fakePart{index: 1, count: 2, lat: seededLatencies(7, 2, 500, time.Millisecond), v1: true, bound: map[string]float64{BoundLeases: 4}}
	sum, out := mergeParts(t, a, b)
	if !sum.V1() || !strings.HasPrefix(sum.Load.Note, V1Note) {
		t.Errorf("schema %q, note %q; want v1 kept and the note starting with %q", sum.Schema, sum.Load.Note, V1Note)
	}
	// v1 latency is over answered requests: no drop makes a percentile unmeasurable.
	if sum.LatencyMs != servedAsOffered(sum.LatencyServedMs) || !sum.LatencyMs.Max.Measurable() || sum.Load.Dropped == 0 {
		t.Errorf("v1 merged latency %+v served %+v; want the served values", sum.LatencyMs, sum.LatencyServedMs)
	}
	// v1 bounds bounded the whole run: they add.
	if b := sum.Overspend.Bound; b.Tokens != 14 || !reflect.DeepEqual(b.Sources, map[string]float64{BoundV1: 14}) || b.Within != nil {
		t.Errorf("v1 bound %+v; want 14 tokens (10 + 4), parts {v1: 14}, within nil", b)
	}
	raw, _ := os.ReadFile(filepath.Join(out, SummaryFile))
	if !strings.Contains(string(raw), `"schema": "ratelab.summary/v1"`) || strings.Contains(string(raw), "latency_served_ms") ||
		!strings.Contains(string(raw), `"bound_tokens": 14`) {
		t.Errorf("merged v1 summary.json is not in the v1 layout:\n%s", raw)
	}
}

func TestMergeRefusesV1WithV2NamingBoth(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lat := seededLatencies(3, 1, 10, time.Millisecond)
	fakePart{index: 0, count: 2, lat: lat, v1: true}.write(t, filepath.Join(root, "old"))
	fakePart{index: 1, count: 2, lat: lat}.write(t, filepath.Join(root, "new"))
	_, err := Merge(filepath.Join(root, "m"), []string{filepath.Join(root, "old"), filepath.Join(root, "new")})
	if !errors.Is(err, ErrMerge) {
		t.Fatalf("Merge = %v; want ErrMerge", err)
	}
	for _, want := range []string{SchemaSummaryV1, SchemaSummary, filepath.Join(root, "old"), filepath.Join(root, "new"), "rerun"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// A fault that failed in any part failed in the merged run, its error naming the part.
func TestMergeFailedFaults(t *testing.T) {
	t.Parallel()
	lat := seededLatencies(8, 1, 10, time.Millisecond)
	ok := []Fault{{AtS: 1, Kind: "gateway-kill", Target: "gw-0"}, {AtS: 2, Kind: "clock-skew", Target: "gw-1", ForS: 1}}
	failed := []Fault{ok[0], {AtS: 2, Kind: "clock-skew", Target: "gw-1", ForS: 1, Failed: true, Error: "no gateway gw-1"}}
	sum, _ := mergeParts(t, fakePart{index: 0, count: 2, lat: lat, faults: ok}, fakePart{index: 1, count: 2, lat: lat, faults: failed})
	if len(sum.Faults) != 2 || sum.Faults[0].Failed || !sum.Faults[1].Failed || sum.Faults[1].Error != "[part 1] no gateway gw-1" {
		t.Errorf("faults %+v; want the second failed, by part 1", sum.Faults)
	}
}
