package report

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ratelab/results"
)

// fixture describes a synthetic run directory built from a seeded generator.
type fixture struct {
	seed     uint64
	rows     int  // per-second rows in timeseries.csv
	zeros    bool // every row all zeros (an idle run)
	noHist   bool // leave out latency.hdr.json
	noYAML   bool // leave out scenario.yaml
	limited  bool // the generator could not keep up
	truncate int  // cut this many bytes off the end of timeseries.csv
	v1       bool // write summary.json as a v1 file, as an older ratelab did
	// faults go into summary.json as they are. Rows at or after a fault's AtS, up to its
	// RecoveredS (or for 2 s when it has none), get the errors a failover causes.
	faults []results.Fault
	// cpu goes into summary.json as it is.
	cpu *results.CPU
}

// twoFaults are the golden run's faults: a primary killed at 8 s (detected, then recovered by a
// failover) and a script flush 0.6 s later, close enough that their labels must be staggered.
var twoFaults = []results.Fault{
	{AtS: 8, Kind: "kill-primary", Target: "127.0.0.1:7001", DetectedS: 9.1, RecoveredS: 10.4},
	{AtS: 8.6, Kind: "script-flush", Target: "127.0.0.1:7002", DetectedS: 8.7},
}

const fixtureYAML = `name: hot-tenant <demo>
seed: 1
duration: 20s
rate: 2000
keys:
  distribution: zipf
  theta: 1.1
`

// write creates the run in dir and returns its summary.
func (f fixture) write(t testing.TB, dir string) *results.Summary {
	t.Helper()
	rng := rand.New(rand.NewPCG(f.seed, f.seed^0x9e3779b97f4a7c15))
	hist := results.NewHistogram()
	var csv bytes.Buffer
	w, err := results.NewTimeseriesWriter(&csv)
	if err != nil {
		t.Fatal(err)
	}
	s := results.NewSummary("hot-tenant <demo>", int64(f.seed), time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	for i := range f.rows {
		iv := results.Interval{TS: float64(i)}
		if !f.zeros {
			sec := results.NewHistogram()
			n := 200 + rng.IntN(100)
			for range n {
				d := time.Duration(rng.ExpFloat64() * float64(800*time.Microsecond))
				if i == f.rows/2 && rng.IntN(10) == 0 { // a stall in the middle of the run
					d += 40 * time.Millisecond
				}
				sec.Record(d)
			}
			hist.Merge(sec)
			offered := int64(n) + rng.Int64N(20)
			dropped := offered - int64(n)
			allowed := int64(n) * 7 / 10
			iv = results.Interval{
				TS: float64(i), Offered: offered, Sent: int64(n), Dropped: dropped, Allowed: allowed,
				Denied: int64(n) - allowed - 2, Errors: 2, Timeout: 1, Moved: rng.Int64N(3),
				P50Ms: sec.QuantileMs(50), P99Ms: sec.QuantileMs(99), P999Ms: sec.QuantileMs(99.9),
				Overspend: rng.Int64N(3), CentralOps: int64(n), MaxMs: sec.MaxMs(),
			}
			f.faultErrors(&iv)
		}
		if err := w.Write(iv); err != nil {
			t.Fatal(err)
		}
		s.Load.Completed += iv.Sent
		s.Load.Sent += iv.Sent
		s.Load.Offered += iv.Offered
		s.Load.Dropped += iv.Dropped
		s.Load.DroppedInflight += iv.Dropped
		s.Outcomes.Allowed += iv.Allowed
		s.Outcomes.Denied += iv.Denied
		s.Outcomes.Errors += iv.Errors
		s.Errors.Timeout += iv.Timeout
		s.Errors.Moved += iv.Moved
		s.Errors.Ask += iv.Ask
		s.Errors.TryAgain += iv.TryAgain
		s.Errors.ClusterDown += iv.ClusterDown
		s.Errors.NoScript += iv.NoScript
		s.Errors.Conn += iv.Conn
		s.Overspend.Requests += iv.Overspend
		s.Central.Ops += iv.CentralOps
	}
	d := float64(max(f.rows, 1))
	s.DurationS = float64(f.rows)
	s.Environment = results.Environment{RedisVersion: "7.0.15", Provider: "local", Primaries: 3, Replicas: 1,
		Cores: 2, Go: "go1.26", Ratelab: "test", Mode: "central"}
	s.Load.OfferedRPS = float64(s.Load.Sent+s.Load.Dropped) / d
	s.Load.AchievedRPS = float64(s.Load.Sent) / d
	s.Load.MaxInflight, s.Load.Concurrency = 256, 64
	if f.limited {
		s.Load.GeneratorLimited = true
		s.Load.Note = "achieved < offered: requests dropped at max_inflight"
	}
	s.LatencyMs, s.LatencyServedMs = results.LatencyOf(hist, s.Load.Dropped)
	s.LatencyClamped = hist.Clamped()
	s.Load.Late = min(s.Load.Completed, 3)
	o := &s.Overspend
	o.Tokens = o.Requests
	o.PossibleRequests, o.PossibleTokens = o.Requests+5, o.Requests+5
	o.Ratio = results.Ratio(o.Requests, s.Outcomes.Allowed)
	o.PossibleRatio = results.Ratio(o.PossibleRequests, s.Outcomes.Allowed)
	o.FalseDenies, o.PossibleFalseDenies = 2, 4
	o.FalseDenyRatio, o.PossibleFalseDenyRatio = results.Ratio(2, s.Outcomes.Denied), results.Ratio(4, s.Outcomes.Denied)
	o.ByCause = map[string]int64{"failover": o.Requests - 3, "clock-skew": 3}
	o.BurstExcess = results.BurstExcess{Tokens: 52.5, WorstKey: "rl:{t1}:search|v2", WorstTokens: 41.5}
	o.Bound.Sources = map[string]float64{results.BoundLeases: 30, results.BoundReplicationGap: 10}
	o.JudgeBound()
	s.Central.OpsPerS = float64(s.Central.Ops) / d
	s.Central.OtherOps = 36
	s.HotKeys = []results.HotKey{{Key: "rl:{t1}:search|v2", Share: 0.31, Node: "127.0.0.1:7001"},
		{Key: "rl:{t7}:*", Share: 0.12, Node: "127.0.0.1:7002"}}
	s.Overspend.UnknownOutcomes = 7
	// The hot tenant's node carries half the ops; replicas answer none.
	s.Nodes = []results.NodeStats{{Addr: "127.0.0.1:7001", Ops: 5200, Share: 0.52}, {Addr: "127.0.0.1:7002", Ops: 2700, Share: 0.27},
		{Addr: "127.0.0.1:7003", Ops: 2100, Share: 0.21}, {Addr: "127.0.0.1:7004"}, {Addr: "127.0.0.1:7005"}, {Addr: "127.0.0.1:7006"}}
	s.Faults = f.faults
	s.CPU = f.cpu
	s.SLO = results.SLO{Pass: false, Checks: []results.Check{
		{Name: "p99_ms <=", Limit: 5, Value: float64(s.LatencyMs.P99), Pass: s.LatencyMs.P99 <= 5},
		{Name: "overspend.ratio <=", Limit: 0.001, Value: s.Overspend.Ratio, Pass: false},
	}}
	if f.v1 { // v1 judged latency over the answered requests
		s.Schema = results.SchemaSummaryV1
		s.SLO.Checks[0].Value = s.LatencyServedMs.P99
		s.SLO.Checks[0].Pass = s.LatencyServedMs.P99 <= 5
	}
	if err := results.WriteSummary(filepath.Join(dir, results.SummaryFile), s); err != nil {
		t.Fatal(err)
	}
	data := csv.Bytes()
	data = data[:len(data)-f.truncate]
	if err := os.WriteFile(filepath.Join(dir, results.TimeseriesFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if !f.noHist {
		var buf bytes.Buffer
		if _, err := hist.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, results.HistogramFile), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !f.noYAML {
		if err := os.WriteFile(filepath.Join(dir, results.ScenarioFile), []byte(fixtureYAML), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// faultErrors adds to the row what a fault in progress causes: while a primary is down its slots
// answer CLUSTERDOWN and connections fail; after the failover clients follow MOVED to the new
// primary, which answers NOSCRIPT once per script; a resharding-like ASK and TRYAGAIN trickle.
// The counts are fixed (no random draws), so adding faults leaves the rest of the fixture as is.
func (f fixture) faultErrors(iv *results.Interval) {
	for _, ft := range f.faults {
		until := ft.RecoveredS
		if until <= ft.AtS {
			until = ft.AtS + 2
		}
		if iv.TS+1 <= ft.AtS || iv.TS >= until {
			continue
		}
		iv.ClusterDown += 12
		iv.Conn += 4
		iv.Ask += 2
		iv.TryAgain++
		iv.Errors += 16 // the CLUSTERDOWN and conn failures are failed decisions
		iv.Denied -= 16
		if iv.TS+1 >= until { // the second the failover completes
			iv.Moved += 25
			iv.NoScript += 3
		}
	}
}
