package attack_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/results"
	"ratelab/run/attack"
	"ratelab/run/check"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

func parseSpec(t *testing.T, yaml string) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Parse("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkRunDir asserts a via: http run left the engine's files plus vegeta's, and that its
// summary adds up.
func checkRunDir(t *testing.T, res *engine.Result) *results.Summary {
	t.Helper()
	for _, f := range []string{results.SummaryFile, results.TimeseriesFile, results.ScenarioFile, results.HistogramFile, attack.ResultsFile} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	sum, err := results.ReadSummary(filepath.Join(res.Dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Environment.Via != scenarios.ViaHTTP {
		t.Errorf("environment.via %q, want http", sum.Environment.Via)
	}
	o := sum.Outcomes
	if got := o.Allowed + o.Denied + o.FailedOpen + o.FailedClosed + o.Errors; got != sum.Load.Completed {
		t.Errorf("outcomes add up to %d, decisions %d", got, sum.Load.Completed)
	}
	var rowsSent int64
	for _, r := range readRows(t, res.Dir) {
		rowsSent += r.Sent
	}
	if rowsSent != sum.Load.Sent {
		t.Errorf("rows sent %d, summary %d", rowsSent, sum.Load.Sent)
	}
	return sum
}

func TestRunScenarioViaHTTPInMemory(t *testing.T) {
	t.Parallel()
	spec := parseSpec(t, `
name: via-http-memory
duration: 2s
via: http
load: {rate: 400, concurrency: 8, max_inflight: 64}
tenants: {count: 20}
endpoints: [{name: read, weight: 3}, {name: write, weight: 1}]
policy: {rate: 10, burst: 5}
limiter: {kind: memory}
`)
	// A caller's consumer hears every record over HTTP too, judged: as many as the decisions,
	// with the summary's overspend among them.
	heard := &recordCounter{}
	res, err := attack.RunScenario(context.Background(), spec, engine.Options{Out: t.TempDir(), Consumers: []engine.Consumer{heard}})
	if err != nil {
		t.Fatal(err)
	}
	sum := checkRunDir(t, res)
	if sum.Scenario != "via-http-memory" || sum.Load.Completed != 800 {
		t.Errorf("scenario %q, %d decisions: want via-http-memory, the schedule's 800", sum.Scenario, sum.Load.Completed)
	}
	if heard.records != sum.Load.Completed || heard.overspend != sum.Overspend.Requests {
		t.Errorf("consumer heard %d records, %d overspent; summary %d decisions, %d overspent", heard.records, heard.overspend, sum.Load.Completed, sum.Overspend.Requests)
	}
	if sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 || sum.Outcomes.Errors != 0 {
		t.Errorf("outcomes %+v: want allowed and denied over HTTP, no errors", sum.Outcomes)
	}
	// The bucket behind the gateway is exact; black-box, two requests of a tenant in flight
	// together may be decided in another order than sent and answered, a small residue (an
	// unlimited target would be judged far above it: 800 requests against 20 buckets of 5 + 2 s x 10/s).
	if sum.Overspend.Ratio > 0.02 {
		t.Errorf("overspend %+v: an exact bucket behind the gateway leaves only a reordering residue", sum.Overspend)
	}
}

// A real cluster, a fault and a fail-open endpoint: the fault runs while vegeta drives the
// gateway, is recorded in the summary, and the paused node's decisions come back fail-open.
func TestRunScenarioViaHTTPWithFaultOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Redis Cluster")
	}
	t.Parallel()
	spec := parseSpec(t, `
name: via-http-pause
duration: 4s
via: http
load: {rate: 300, concurrency: 16, max_inflight: 256}
tenants: {count: 50}
endpoints: [{name: read, weight: 1, fail: open, budget: 100ms}]
policy: {rate: 20, burst: 40}
limiter: {kind: token-bucket, timeout: 100ms}
cluster: {primaries: 2, replicas: 0}
faults:
  - {at: 1s, kind: pause, target: hottest, for: 1500ms}
`)
	res, err := attack.RunScenario(context.Background(), spec, engine.Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sum := checkRunDir(t, res)
	if len(sum.Faults) != 1 || sum.Faults[0].Kind != "pause" {
		t.Fatalf("faults %+v: want the pause recorded", sum.Faults)
	}
	if sum.Outcomes.FailedOpen == 0 {
		t.Errorf("outcomes %+v: the paused primary's tenants must fail open over HTTP", sum.Outcomes)
	}
	if sum.Environment.Provider != "local" || !strings.HasPrefix(sum.Environment.RedisVersion, "7.") || sum.Central.Ops == 0 {
		t.Errorf("environment %+v, central %+v: want the local cluster's", sum.Environment, sum.Central)
	}
}

// Tariffs over HTTP: the gateway looks each tenant's plan up, and the black-box envelope judges
// each key by its own plan. tenant-0 and tenant-1 (the hottest) have big plans, everyone else a
// small one: judged by one policy, tenant-0's traffic would be mostly overspend (or the small
// tenants' denials false); by each tenant's own rule only the reordering residue is left.
func TestRunScenarioViaHTTPTariffs(t *testing.T) {
	t.Parallel()
	spec := parseSpec(t, `
name: via-http-tariffs
duration: 2s
via: http
load: {rate: 600, concurrency: 8, max_inflight: 64}
tenants: {count: 30, theta: 1.2}
endpoints: [{name: read, weight: 3}, {name: write, weight: 1}]
policy:
  tariffs:
    version: 3
    plans:
      small: {default: {rate: 2, burst: 4}}
      big: {default: {rate: 200, burst: 300}}
    tenants: {tenant-0: big, tenant-1: big}
    default_plan: small
limiter: {kind: memory}
`)
	res, err := attack.RunScenario(context.Background(), spec, engine.Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sum := checkRunDir(t, res)
	if sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 {
		t.Fatalf("outcomes %+v: want both plans to show (the small ones deny)", sum.Outcomes)
	}
	if o := sum.Overspend; o.Ratio > 0.02 || o.FalseDenyRatio > 0.05 {
		t.Errorf("overspend %+v: the envelope must judge each tenant by its own plan", o)
	}
	if !strings.Contains(sum.Load.Note, "tariffs: version 3 at the start") {
		t.Errorf("note %q: want the tariff version", sum.Load.Note)
	}
}

// Leases over HTTP: one gateway server per lease gateway, each with its own leases, requests
// spread over them; the summary has the lease layer's figures and its bound. The decision
// timeout is generous: under -race on a loaded 2-core machine a lease fetch can miss 200 ms, and
// a timed-out fetch is an error outcome, which this test is not about.
func TestRunScenarioViaHTTPLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Redis Cluster")
	}
	t.Parallel()
	spec := parseSpec(t, `
name: via-http-lease
duration: 3s
via: http
load: {rate: 500, concurrency: 16, max_inflight: 256}
tenants: {count: 20}
policy: {rate: 20, burst: 40}
limiter: {kind: lease, timeout: 2s, lease: {size: 10, gateways: 3}}
cluster: {primaries: 2, replicas: 0}
`)
	res, err := attack.RunScenario(context.Background(), spec, engine.Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sum := checkRunDir(t, res)
	if sum.Environment.Mode != "http gateway, lease" || !strings.Contains(sum.Load.Note, "3 ratelab gateway(s)") {
		t.Errorf("mode %q, note %q: want three lease gateways over HTTP", sum.Environment.Mode, sum.Load.Note)
	}
	if !strings.Contains(sum.Load.Note, "leases: 3 gateways") || sum.Central.Ops == 0 {
		t.Errorf("note %q, central %+v: want the lease layer's figures", sum.Load.Note, sum.Central)
	}
	if sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 || sum.Outcomes.Errors != 0 {
		t.Errorf("outcomes %+v, errors %+v: want leases to allow and deny, no errors", sum.Outcomes, sum.Errors)
	}
	// Central ops: fewer than decisions, since a fetch takes up to 10 tokens (how many fewer
	// depends on how often the drained buckets refuse, which timing decides).
	if sum.Central.Ops >= sum.Load.Completed {
		t.Errorf("%d central ops for %d decisions: leases must spare round trips", sum.Central.Ops, sum.Load.Completed)
	}
}

// recordCounter counts the records a run's consumer hears (over HTTP from one goroutine).
type recordCounter struct{ records, overspend int64 }

func (c *recordCounter) Consume(r *engine.Record) {
	c.records++
	if r.Verdict == check.Overspend {
		c.overspend++
	}
}
