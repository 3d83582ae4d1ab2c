package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// sampleSummary fills every field with a distinct non-zero value, so the golden shows them all;
// the drops make p99.9 and max not measurable (null).
func sampleSummary() *Summary {
	within := false
	return &Summary{
		Scenario:    "hot-tenant-failover",
		Seed:        42,
		StartedAt:   time.Date(2025, 3, 14, 15, 9, 26, 535000000, time.UTC),
		DurationS:   60.5,
		Interrupted: true,
		Environment: Environment{RedisVersion: "7.0.15", Provider: "local", Primaries: 3, Replicas: 1,
			Cores: 2, Go: "go1.26.8", Ratelab: "v0.1.0", Mode: "central"},
		Load: Load{OfferedRPS: 20000, AchievedRPS: 18500.5, Offered: 1210000, Completed: 1119280, Late: 20,
			Sent: 1119300, Dropped: 90700, DroppedInflight: 90000, DroppedBehind: 700, LostSeconds: 1,
			MaxInflight: 512, Concurrency: 64, GeneratorLimited: true, Limit: LimitGenerator, ScheduleLagP99Ms: 0.375,
			Notes: []Note{{Kind: NoteLoad, Text: "achieved 18500.5/s < offered 20000/s"}, {Kind: NoteDrops, Text: "90700 requests dropped at max_inflight 512"}},
			Note:  "achieved 18500.5/s < offered 20000/s; 90700 requests dropped at max_inflight 512"},
		Outcomes: Outcomes{Allowed: 900000, Denied: 200000, FailedOpen: 10000, FailedClosed: 9000, Errors: 280},
		Errors:   Errors{Timeout: 1, Moved: 2, Ask: 3, TryAgain: 4, ClusterDown: 5, NoScript: 6, Conn: 7, Unreplicated: 9, Other: 8},
		LatencyMs: Latency{P50: 0.45, P90: 1.1, P99: 8.5, P999: Unmeasurable, Max: Unmeasurable,
			MeasurablePct: 92.5, Undecided: 90980},
		LatencyServedMs: ServedLatency{P50: 0.412, P90: 0.9, P99: 2.5, P999: 12.75, Max: 2301.5},
		LatencyClamped:  3,
		Overspend: Overspend{Requests: 1200, Tokens: 1300, Ratio: Ratio(1200, 910000),
			PossibleRequests: 1250, PossibleTokens: 1350, PossibleRatio: Ratio(1250, 910000),
			FalseDenies: 30, FalseDenyRatio: Ratio(30, 209000),
			PossibleFalseDenies: 31, PossibleFalseDenyRatio: Ratio(31, 209000), UnknownOutcomes: 50,
			ByCause:     map[string]int64{"failover": 1100, "fail-open": 100},
			BurstExcess: BurstExcess{Tokens: 1600.25, WorstKey: "rl:{t1}:search", WorstTokens: 1510.5},
			Bound: Bound{Tokens: 1500.5, Sources: map[string]float64{BoundLeases: 1000, BoundReplicationGap: 500.5},
				Within: &within}},
		Central: Central{Ops: 1119000, OpsPerS: 18495.87, OtherOps: 420},
		HotKeys: []HotKey{{Key: "rl:{t1}:search", Share: 0.21, Node: "127.0.0.1:7001"}},
		Nodes:   []NodeStats{{Addr: "127.0.0.1:7001", Ops: 1200, Share: 0.5, Moved: 3, Ask: 1, NoScript: 1}},
		Faults: []Fault{{AtS: 20, Kind: "kill", Target: "127.0.0.1:7001", DetectedS: 21.1, RecoveredS: 22.4},
			{AtS: 30, Kind: "pause", Target: "127.0.0.1:7002", ForS: 2, Failed: true, Error: "SIGSTOP: no such process"}},
		SLO: SLO{Pass: false, Checks: []Check{
			{Name: "p99_ms <=", Limit: 10, Value: 8.5, Pass: true},
			{Name: "p999_ms <=", Limit: 50, Value: math.Inf(1), Pass: false},
			{Name: "overspend.ratio <=", Limit: 0.001, Value: 0.00133, Pass: false},
		}},
	}
}

func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), SummaryFile)
	if err := WriteSummary(path, sampleSummary()); err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden.json")
	if *update {
		if err := os.WriteFile(golden, have, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("summary.json differs from %s (go test -update rewrites it):\nhave:\n%s\nwant:\n%s", golden, have, want)
	}
}

// requiredFields is every JSON field summary.json always writes (those without omitempty), the
// names readers rely on, plus the optional ones sampleSummary sets (load.limit, faults[].for_s,
// failed, error).
var requiredFields = []string{
	"schema", "scenario", "seed", "started_at", "duration_s", "interrupted",
	"environment", "environment.redis_version", "environment.provider", "environment.primaries",
	"environment.replicas", "environment.cores", "environment.go", "environment.ratelab", "environment.mode",
	"load", "load.offered_rps", "load.achieved_rps", "load.offered", "load.decisions", "load.late",
	"load.sent", "load.dropped", "load.dropped_inflight", "load.dropped_behind", "load.lost_seconds",
	"load.max_inflight", "load.concurrency", "load.generator_limited", "load.limit", "load.note",
	"load.notes", "load.notes[].kind", "load.notes[].text",
	"load.schedule_lag_p99_ms",
	"outcomes", "outcomes.allowed", "outcomes.denied", "outcomes.failed_open", "outcomes.failed_closed",
	"outcomes.errors",
	"errors", "errors.timeout", "errors.moved", "errors.ask", "errors.tryagain", "errors.clusterdown", "errors.unreplicated",
	"errors.noscript", "errors.conn", "errors.other",
	"latency_ms", "latency_ms.p50", "latency_ms.p90", "latency_ms.p99", "latency_ms.p999", "latency_ms.max",
	"latency_ms.measurable_pct", "latency_ms.undecided",
	"latency_served_ms", "latency_served_ms.p50", "latency_served_ms.p90", "latency_served_ms.p99",
	"latency_served_ms.p999", "latency_served_ms.max", "latency_clamped",
	"overspend", "overspend.requests", "overspend.tokens", "overspend.ratio",
	"overspend.possible_requests", "overspend.possible_tokens", "overspend.possible_ratio",
	"overspend.false_denies", "overspend.false_deny_ratio",
	"overspend.possible_false_denies", "overspend.possible_false_deny_ratio",
	"overspend.unknown_outcomes", "overspend.by_cause",
	"overspend.burst_excess", "overspend.burst_excess.tokens", "overspend.burst_excess.worst_key",
	"overspend.burst_excess.worst_tokens",
	"overspend.bound", "overspend.bound.tokens", "overspend.bound.sources", "overspend.bound.within",
	"central", "central.ops", "central.ops_per_s", "central.other_ops",
	"hot_keys", "hot_keys[].key", "hot_keys[].share", "hot_keys[].node",
	"nodes", "nodes[].addr", "nodes[].ops", "nodes[].share", "nodes[].moved", "nodes[].ask", "nodes[].noscript",
	"nodes[].tryagain", "nodes[].clusterdown", "nodes[].timeout", "nodes[].conn",
	"process", "process.rss_warm_mb", "process.rss_end_mb", "process.heap_warm_mb", "process.heap_end_mb", "process.goroutines_warm", "process.goroutines_end",
	"faults", "faults[].at_s", "faults[].kind", "faults[].target", "faults[].detected_s", "faults[].recovered_s",
	"faults[].for_s", "faults[].failed", "faults[].error",
	"slo", "slo.pass", "slo.checks", "slo.checks[].name", "slo.checks[].limit", "slo.checks[].value",
	"slo.checks[].pass",
}

// jsonPaths lists the field paths of a decoded JSON value; map keys under by_cause and
// bound.parts are data, not fields, so the walk stops there.
func jsonPaths(v any, prefix string, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			p := join(prefix, k)
			*out = append(*out, p)
			if p != "overspend.by_cause" && p != "overspend.bound.sources" {
				jsonPaths(child, p, out)
			}
		}
	case []any:
		for _, child := range v {
			jsonPaths(child, prefix+"[]", out)
		}
	}
}

func TestSummaryRequiredFieldNames(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(sampleSummary())
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var have []string
	jsonPaths(v, "", &have)
	slices.Sort(have)
	have = slices.Compact(have)
	want := slices.Sorted(slices.Values(requiredFields))
	if !slices.Equal(have, want) {
		t.Errorf("summary JSON fields differ from requiredFields\nhave %v\nwant %v", have, want)
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	t.Parallel()
	notJudged := []string{"overspend.bound.within"}
	tests := []struct {
		name  string
		have  *Summary
		nulls []string // the JSON paths written as null, sorted
	}{
		{"full", sampleSummary(), []string{"latency_ms.max", "latency_ms.p999", "slo.checks[].value"}},
		{"empty lists become empty, not null", NewSummary("smoke", 7, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)), notJudged},
		{"zero value", &Summary{}, notJudged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), SummaryFile)
			before := *tt.have
			if err := WriteSummary(path, tt.have); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*tt.have, before) {
				t.Errorf("WriteSummary modified its argument")
			}
			have, err := ReadSummary(path)
			if err != nil {
				t.Fatal(err)
			}
			want := *tt.have
			want.normalize()
			if !reflect.DeepEqual(*have, want) {
				t.Errorf("round trip\nhave %+v\nwant %+v", *have, want)
			}
			raw, _ := os.ReadFile(path)
			if nulls := jsonNulls(t, raw); !slices.Equal(nulls, tt.nulls) {
				t.Errorf("summary.json has null at %v, want %v (only what is not measurable or judged):\n%s", nulls, tt.nulls, raw)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries after an atomic write, want 1 (temp file left?)", len(entries))
			}
		})
	}
}

func TestReadSummaryRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		have     string
		want     error
		wantText string
	}{
		{"wrong schema", `{"schema":"ratelab.summary/v5","scenario":"x"}`, ErrSchema, `"ratelab.summary/v5"; this ratelab reads "ratelab.summary/v4", "ratelab.summary/v3", "ratelab.summary/v2" and "ratelab.summary/v1"`},
		{"no schema", `{"scenario":"x"}`, ErrSchema, `no "schema" field`},
		{"not json", `{"schema":`, ErrCorrupt, "not a JSON object"},
		{"wrong type", `{"schema":"ratelab.summary/v2","seed":"abc"}`, ErrCorrupt, "seed"},
		{"wrong type in v1", `{"schema":"ratelab.summary/v1","seed":"abc"}`, ErrCorrupt, "seed"},
		{"wrong latency", `{"schema":"ratelab.summary/v2","latency_ms":{"p99":"slow"}}`, ErrCorrupt, "latency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), SummaryFile)
			if err := os.WriteFile(path, []byte(tt.have), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadSummary(path)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("ReadSummary(%s) = %v, want %v containing %q", tt.have, err, tt.want, tt.wantText)
			}
		})
	}
}

func TestWriteSummaryRejectsNonFinite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		set   func(*Summary)
		field string
	}{
		{"ratio NaN", func(s *Summary) { s.Overspend.Ratio = math.NaN() }, "overspend.ratio"},
		{"ratio +Inf", func(s *Summary) { s.Overspend.Ratio = math.Inf(1) }, "overspend.ratio"},
		{"p99 NaN", func(s *Summary) { s.LatencyMs.P99 = Ms(math.NaN()) }, "latency_ms.p99"},
		{"p99 -Inf", func(s *Summary) { s.LatencyMs.P99 = Ms(math.Inf(-1)) }, "latency_ms.p99"},
		{"served p99 +Inf", func(s *Summary) { s.LatencyServedMs.P99 = math.Inf(1) }, "latency_served_ms.p99"},
		{"check value NaN", func(s *Summary) { s.SLO.Checks[1].Value = math.NaN() }, "slo.checks[1].value"},
		{"check limit +Inf", func(s *Summary) { s.SLO.Checks[1].Limit = math.Inf(1) }, "slo.checks[1].limit"},
		{"bound NaN", func(s *Summary) { s.Overspend.Bound.Tokens = math.NaN() }, "overspend.bound.tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := sampleSummary()
			tt.set(s)
			path := filepath.Join(t.TempDir(), SummaryFile)
			err := WriteSummary(path, s)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "field "+tt.field+" ") {
				t.Errorf("WriteSummary = %v, want ErrInvalid naming %s", err, tt.field)
			}
			if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
				t.Errorf("a rejected summary was written")
			}
		})
	}
}

// jsonNulls lists the JSON paths of raw whose value is null, sorted (array indexes as []).
func jsonNulls(t *testing.T, raw []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case nil:
			out = append(out, path)
		case map[string]any:
			for k, c := range v {
				walk(c, join(path, k))
			}
		case []any:
			for _, c := range v {
				walk(c, path+"[]")
			}
		}
	}
	walk(v, "")
	slices.Sort(out)
	return slices.Compact(out)
}

func TestRatio(t *testing.T) {
	t.Parallel()
	tests := []struct {
		num, den int64
		want     float64
	}{
		{0, 0, 0}, {5, 0, 0}, {1, 4, 0.25}, {3, 3, 1},
	}
	for _, tt := range tests {
		if have := Ratio(tt.num, tt.den); have != tt.want {
			t.Errorf("Ratio(%d, %d) = %v, want %v", tt.num, tt.den, have, tt.want)
		}
	}
}

// TestReadSummaryV2: a v2 file reads with its schema kept, its latency's "dropped" as Undecided,
// and the old definitions' note; written back it stays v2.
func TestReadSummaryV2(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "summary.json")
	v2 := `{"schema":"ratelab.summary/v2","scenario":"x","latency_ms":{"p50":1,"p90":1,"p99":null,"p999":null,"max":null,"measurable_pct":98,"dropped":20}}`
	if err := os.WriteFile(path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != SchemaSummaryV2 || s.LatencyMs.Undecided != 20 || s.OldDefinitions() != V2Note {
		t.Fatalf("v2 read as schema %q, undecided %d, note %q; want v2, 20, V2Note", s.Schema, s.LatencyMs.Undecided, s.OldDefinitions())
	}
	if err := WriteSummary(path, s); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadSummary(path); err != nil || back.Schema != SchemaSummaryV2 {
		t.Fatalf("v2 written back reads as %v, %v; want v2", back, err)
	}
}

// TestReadSummaryV3: a v3 file (false denies by the old definition) reads with its schema kept
// and the old definition's note, stays v3 written back, and compare-style readers can tell it
// from v4.
func TestReadSummaryV3(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "summary.json")
	v3 := `{"schema":"ratelab.summary/v3","scenario":"x","overspend":{"false_denies":62}}`
	if err := os.WriteFile(path, []byte(v3), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != SchemaSummaryV3 || s.Overspend.FalseDenies != 62 || s.OldDefinitions() != V3Note {
		t.Fatalf("v3 read as schema %q, false denies %d, note %q; want v3, 62, V3Note", s.Schema, s.Overspend.FalseDenies, s.OldDefinitions())
	}
	if err := WriteSummary(path, s); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadSummary(path); err != nil || back.Schema != SchemaSummaryV3 {
		t.Fatalf("v3 written back reads as %v, %v; want v3", back, err)
	}
}
