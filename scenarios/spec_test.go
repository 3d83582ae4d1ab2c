package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const validYAML = `
name: t
duration: 2s
load: {rate: 1000}
tenants: {count: 10}
policy: {rate: 10, burst: 20}
`

func TestBuiltinsParse(t *testing.T) {
	t.Parallel()
	names := BuiltinNames()
	for _, want := range []string{"generator", "hot-tenant", "smoke"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Errorf("BuiltinNames() = %v, want it to include %q", names, want)
		}
	}
	for _, n := range names {
		s, err := Builtin(n)
		if err != nil {
			t.Errorf("Builtin(%q): %v", n, err)
			continue
		}
		if s.Name != n {
			t.Errorf("Builtin(%q).Name = %q, want the file name", n, s.Name)
		}
		// The resolved YAML parses back to the same spec.
		again, err := Parse("resolved", s.YAML())
		if err != nil {
			t.Errorf("re-parse of resolved %q: %v", n, err)
		} else if string(again.YAML()) != string(s.YAML()) {
			t.Errorf("resolved %q does not round-trip:\n%s\nvs\n%s", n, s.YAML(), again.YAML())
		}
	}
}

func TestHotTenantIsTheIssuesScenario(t *testing.T) {
	t.Parallel()
	s, err := Builtin("hot-tenant")
	if err != nil {
		t.Fatal(err)
	}
	if s.Tenants.Count != 10000 || s.Tenants.Distribution != DistZipf || s.Tenants.Theta != 0.99 ||
		len(s.Endpoints) != 3 || s.Policy.Rate != 100 || s.Policy.Burst != 200 || s.Load.Rate != 100000 {
		t.Errorf("hot-tenant = %+v, want 10,000 Zipf(0.99) tenants, 3 endpoints, 100 rps burst 200, 100,000 offered", s)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	s, err := Parse("x.yaml", []byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(s.Duration); got != 2*time.Second {
		t.Errorf("duration = %v", got)
	}
	if s.Load.Pacer != PacerConstant || s.Load.MaxInflight != DefaultMaxInflight || s.Load.Concurrency != DefaultConcurrency ||
		s.Tenants.Distribution != DistZipf || s.Tenants.Theta != DefaultTheta || s.Limiter.Kind != KindTokenBucket ||
		s.Cluster.Provider != ProviderLocal || s.Cluster.Primaries != 3 || *s.Cluster.Replicas != 1 || len(s.Endpoints) != 1 {
		t.Errorf("defaults not applied: %+v", s)
	}
	zero, err := Parse("x.yaml", []byte(validYAML+"cluster: {replicas: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *zero.Cluster.Replicas != 0 {
		t.Errorf("replicas: 0 became %d; an explicit 0 must stay 0", *zero.Cluster.Replicas)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string // every substring must appear
	}{
		{"unknown field", validYAML + "bogus: 1\n", []string{"x.yaml", "line 7", "field bogus not found"}},
		{"unknown nested field", strings.Replace(validYAML, "{rate: 1000}", "{rate: 1000, rps: 5}", 1), []string{"field rps not found"}},
		{"bad duration", strings.Replace(validYAML, "2s", "2 parsecs", 1), []string{"line 3", "not a duration"}},
		{"short duration", strings.Replace(validYAML, "2s", "10ms", 1), []string{"duration: 10ms: must be at least 1s"}},
		{"no name", strings.Replace(validYAML, "name: t", "name: ''", 1), []string{"name:", "give the scenario a name"}},
		{"zero rate", strings.Replace(validYAML, "{rate: 1000}", "{rate: 0}", 1), []string{"x.yaml:4: load.rate: 0: must be > 0"}},
		{"negative rate", strings.Replace(validYAML, "{rate: 1000}", "{rate: -5}", 1), []string{"load.rate: -5"}},
		{"pacer", strings.Replace(validYAML, "{rate: 1000}", "{rate: 1000, pacer: bursty}", 1), []string{`load.pacer: "bursty": use constant or poisson`}},
		{"inflight", strings.Replace(validYAML, "{rate: 1000}", "{rate: 1000, max_inflight: -1}", 1), []string{"load.max_inflight: -1"}},
		{"concurrency above inflight", strings.Replace(validYAML, "{rate: 1000}", "{rate: 1000, max_inflight: 10, concurrency: 20}", 1), []string{"load.concurrency: 20: must not exceed load.max_inflight (10)"}},
		{"tenants", strings.Replace(validYAML, "{count: 10}", "{count: 0}", 1), []string{"tenants.count: 0"}},
		{"theta", strings.Replace(validYAML, "{count: 10}", "{count: 10, theta: -1}", 1), []string{"tenants.theta: -1"}},
		{"distribution", strings.Replace(validYAML, "{count: 10}", "{count: 10, distribution: pareto}", 1), []string{`tenants.distribution: "pareto"`}},
		{"hotspot", strings.Replace(validYAML, "{count: 10}", "{count: 10, distribution: hotspot, hot_share: 2, hot_keys: 11}", 1), []string{"tenants.hot_share: 2", "tenants.hot_keys: 11: must be between 1 and tenants.count (10)"}},
		{"policy", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{rate: 0, burst: 0}", 1), []string{"x.yaml:6: policy.rate: 0", "x.yaml:6: policy.burst: 0"}},
		{"endpoint", validYAML + "endpoints: [{name: 'a b', weight: 1}, {name: x, weight: 0}, {name: x, weight: 1}]\n", []string{`x.yaml:7: endpoints[0].name: "a b"`, "x.yaml:7: endpoints[1].weight: 0", `endpoints[2].name: "x": is listed twice`}},
		{"limiter", validYAML + "limiter: {kind: leaky, timeout: 1h}\n", []string{`limiter.kind: "leaky": use token-bucket, gcra, fixed-window, sliding-window, sliding-log, two-tier, lease, memory, noop, redis-rate or gubernator`, "limiter.timeout: 1h0m0s"}},
		{"cluster", validYAML + "cluster: {provider: cloud, primaries: -1, replicas: 9, node_timeout: 1ms}\n", []string{`cluster.provider: "cloud": use local, running, docker or external`, "cluster.primaries: -1", "cluster.replicas: 9", "cluster.node_timeout: 1ms"}},
		{"fault kind", validYAML + "faults: [{at: 1s, kind: meteor}]\n", []string{`faults[0].kind: "meteor": use one of kill-primary, pause`}},
		{"fault time", validYAML + "faults: [{at: 5s, kind: script-flush}]\n", []string{"faults[0].at: 5s: must be within the run: 0 <= at < duration (2s)"}},
		{"warm-up beyond the run", validYAML + "slo: {warmup: 2s, rss_growth: 0.05}\n", []string{"slo.warmup: 2s: must be within the run: 0 < warmup < duration (2s); leave it out for a tenth of the run"}},
		{"warm-up zero", validYAML + "slo: {warmup: 0s}\n", []string{"slo.warmup: 0s: must be within the run"}},
		{"fault target", validYAML + "faults: [{at: 1s, kind: restart, target: node:6}, {at: 1s, kind: pause, target: moon, for: 1s}]\n",
			[]string{`faults[0].target: "node:6": node:N needs 0 <= N < 6`, `faults[1].target: "moon": use hottest, all, killed, node:N, slot:N or primary-of:TENANT`}},
		{"fault tenant", validYAML + "faults: [{at: 1s, kind: restart, target: primary-of:tenant-10}]\n", []string{"no such tenant: tenants are tenant-0 .. tenant-9"}},
		{"fault fields", validYAML + "faults: [{at: 1s, kind: pause}, {at: 1s, kind: latency, delay: 0s}, {at: 1s, kind: failover, mode: gently}, {at: 1s, kind: reshard, slots: 0, from: node:0, to: node:0}, {at: 1s, kind: restart, for: 1s}]\n",
			[]string{"faults[0].for: 0s: a pause needs a length", "faults[1].delay: 0s", `faults[2].mode: "gently"`, "faults[3].slots: 0", `faults[3].to: "node:0": must differ from from`, "faults[4].for: 1s: only pause and latency"}},
		{"ask window", validYAML + "faults: [{at: 1s, kind: reshard, slots: 1, from: node:0, to: node:1, ask_window: 2s}, {at: 1s, kind: pause, for: 1s, ask_window: 5ms}]\n",
			[]string{"faults[0].ask_window: 2s: must be between 0 (the default, 20ms) and 1s per slot", "faults[1].ask_window: 5ms: only a reshard has an ask window"}},
		{"fault without redis", validYAML + "limiter: {kind: memory}\nfaults: [{at: 1s, kind: script-flush}]\n", []string{`faults act on the Redis Cluster; limiter.kind "memory" has none`}},
		{"kill without replicas", validYAML + "cluster: {replicas: 0}\nfaults: [{at: 1s, kind: kill-primary}]\n", []string{"set cluster.replicas >= 1"}},
		{"fail policy", validYAML + "endpoints: [{name: a, weight: 1, fail: maybe, budget: 1ns}, {name: b, weight: 1, fail: local, local_fraction: 2}]\n",
			[]string{`endpoints[0].fail: "maybe": use open, closed or local`, "endpoints[0].budget: 1ns", "endpoints[1].local_fraction: 2"}},
		{"breaker without fail", validYAML + "limiter: {breaker: {threshold: 0, cooldown: 1h}}\n", []string{"limiter.breaker: set: a breaker decides by the endpoints' fail policy", "limiter.breaker.cooldown: 1h0m0s"}},
		{"window kind needs limit and window", validYAML + "limiter: {kind: fixed-window}\n", []string{"policy.limit: 0: limiter.kind fixed-window needs", "policy.window: 0s", "policy: rate/burst: limiter.kind fixed-window takes limit and window"}},
		{"bucket kind refuses a window", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{rate: 10, burst: 20, limit: 5, window: 1s}", 1), []string{"policy: limit/window: limiter.kind token-bucket takes rate and burst, or limit and window"}},
		{"bucket kind by window", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{limit: 0, window: 48h}", 1), []string{"x.yaml:6: policy.limit: 0: must be >= 1", "x.yaml:6: policy.window: 48h0m0s"}},
		{"lease fields", validYAML + "limiter: {kind: lease, lease: {size: 50, gateways: 0}}\n", []string{"limiter.lease.size: 50: must be between 1 and policy.burst (20)"}},
		{"two-tier without quota", validYAML + "limiter: {kind: two-tier}\n", []string{"x.yaml:6: policy.quota: missing: limiter.kind two-tier needs the long tier"}},
		{"two-tier quota fields", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{rate: 10, burst: 20, quota: {limit: 0, window: 1us}}", 1) + "limiter: {kind: two-tier}\n",
			[]string{"x.yaml:6: policy.quota.limit: 0: must be between 1 and 2^53", "x.yaml:6: policy.quota.window: 1µs: must be a whole number of milliseconds"}},
		{"quota without two-tier", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{rate: 10, burst: 20, quota: {limit: 5, window: 1h}}", 1),
			[]string{`x.yaml:6: policy.quota: set: a quota is the long tier of limiter.kind two-tier (kind is "token-bucket")`}},
		{"two-tier with fail policy", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{rate: 10, burst: 20, quota: {limit: 5, window: 1h}}", 1) + "limiter: {kind: two-tier}\nendpoints: [{name: a, weight: 1, fail: open}]\n",
			[]string{"limiter.kind: two-tier: fail policies wrap the token bucket only"}},
		{"trace", validYAML + "trace: {speed: -1}\n", []string{`trace.file: "": name the trace to replay`, `trace.speed: -1: must be in (0, 1000]`}},
		{"via", validYAML + "via: grpc\n", []string{`x.yaml:7: via: "grpc": use process (in-process decisions, the default) or http`}},
		{"clock", validYAML + "limiter: {clock: atomic}\n", []string{`x.yaml:7: limiter.clock: "atomic": use gateway (the request's time), redis (TIME inside the script) or schedule`}},
		{"redis clock needs token bucket", validYAML + "limiter: {kind: gcra, clock: redis}\n", []string{`x.yaml:7: limiter.clock: redis: only limiter.kind token-bucket and redis-rate take their time from Redis (kind is "gcra")`}},
		{"gateways", validYAML + "limiter: {gateways: 2000}\n", []string{"x.yaml:7: limiter.gateways: 2000: must be between 1 and 1024", "load.concurrency: 256: must be at least the number of simulated gateways (2000)"}},
		{"gateways with lease", validYAML + "limiter: {kind: lease, gateways: 2}\n", []string{"limiter.gateways: 2: kind lease counts its gateways in limiter.lease.gateways"}},
		{"clock-skew fields", validYAML + "limiter: {gateways: 2}\nfaults: [{at: 1s, kind: clock-skew, target: gateway:2}, {at: 1s, kind: clock-skew, target: gateways:3, offset: 2h, for: -1s}, {at: 1s, kind: pause, for: 1s, offset: 1s}]\n",
			[]string{`x.yaml:8: faults[0].target: "gateway:2": use all, gateway:N (0 <= N < 2) or gateways:K`, "faults[0].offset: 0s: a skew needs an offset", `faults[1].target: "gateways:3"`, "faults[1].offset: 2h0m0s", "faults[1].for: -1s", "faults[2].offset: 1s: only a clock-skew fault has an offset"}},
		{"clock-skew on noop", validYAML + "limiter: {kind: noop}\nfaults: [{at: 1s, kind: clock-skew, offset: 1s}]\n", []string{"faults[0].kind: clock-skew: limiter.kind noop ignores time"}},
		{"gateway-kill needs leases", validYAML + "faults: [{at: 1s, kind: gateway-kill, for: 1s}]\n", []string{`faults[0].kind: gateway-kill: a gateway's death loses its leases: only limiter.kind lease`, "faults[0].for: 1s: a gateway-kill is instant"}},
		{"tariffs with limits", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{rate: 10, file: t.yaml}", 1) + "limiter: {kind: gcra}\n",
			[]string{"x.yaml:6: policy: rate/burst/limit/window/quota: the tariffs give every tenant's limits", "limiter.kind: gcra: tariffs set a bucket per tenant endpoint: use kind token-bucket or memory with policy.file"}},
		{"tariffs file and inline", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{file: t.yaml, tariffs: {version: 1}}", 1),
			[]string{"policy.file: t.yaml: give the tariffs either as a file or inline"}},
		{"inline tariffs invalid", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{tariffs: {version: 0, plans: {free: {default: {rate: -1, burst: 5}}}, default_plan: gold}}", 1),
			[]string{"x.yaml:6: policy.tariffs: invalid:", "version: 0: must be >= 1", "plans.free.default.rate: -1", `default_plan: "gold": no such plan`}},
		{"durability", validYAML + "limiter: {durability: sync, audit: true, kind: gcra}\n",
			[]string{`limiter.durability: "sync": use async (the default), wait`, `limiter.audit: true: only limiter.kind token-bucket keeps a debit audit (kind is "gcra")`}},
		{"wait fields", validYAML + "limiter: {durability: wait, durability_replicas: 2, durability_timeout: 20s}\n",
			[]string{"limiter.durability_replicas: 2: a primary has 1 replicas (cluster.replicas): WAIT for at most that many", "limiter.durability_timeout: 20s: must be between 1ms and 10s"}},
		{"audit over http", validYAML + "limiter: {audit: true}\nvia: http\n", []string{"limiter.audit: true: tokens back compares the audit with the decisions the engine saw in process"}},
		{"wait needs replicas", validYAML + "limiter: {durability: wait}\ncluster: {replicas: 0}\n", []string{"limiter.durability: wait: WAIT needs replicas to wait for: set cluster.replicas >= 1"}},
		{"wait on an external cluster", validYAML + "limiter: {durability: wait}\ncluster: {provider: external, url: \"redis://127.0.0.1:7000\"}\n",
			[]string{"limiter.durability: wait: WAIT runs on each primary's own connection, outside the key prefix"}},
		{"wait on a lease", validYAML + "limiter: {kind: lease, durability: wait}\n", []string{`limiter.durability: wait: only limiter.kind token-bucket waits for its debits to replicate (kind is "lease")`}},
		{"wait-pipeline needs coalesce", validYAML + "limiter: {durability: wait-pipeline}\n", []string{`limiter.durability: wait-pipeline: wait-pipeline waits once per pipeline: set limiter.transport: coalesce (it is "plain")`}},
		{"wait fields without wait", validYAML + "limiter: {durability_replicas: 1, durability_timeout: 5ms}\n",
			[]string{"limiter.durability_replicas: 1: only WAIT takes replicas", "limiter.durability_timeout: 5ms: only WAIT takes a timeout"}},
		{"min replicas", validYAML + "cluster: {min_replicas_to_write: 2, min_replicas_max_lag: 1500ms}\n",
			[]string{"cluster.min_replicas_to_write: 2: a primary has 1 replicas (cluster.replicas): it would refuse every write; set at most 1", "cluster.min_replicas_max_lag: 1.5s: must be whole seconds between 1s and 1h"}},
		{"min replicas lag alone", validYAML + "cluster: {min_replicas_max_lag: 5s, provider: external, url: 'redis://127.0.0.1:1'}\n", []string{"cluster.min_replicas_max_lag: 5s: only matters with cluster.min_replicas_to_write >= 1"}},
		{"min replicas elsewhere", validYAML + "cluster: {min_replicas_to_write: 1, provider: running}\n", []string{`cluster.min_replicas_to_write: 1: ratelab sets it on the nodes it starts: use provider local (provider is "running")`}},
		{"partition fields", validYAML + "faults: [{at: 1s, kind: partition}, {at: 1s, kind: partition, for: 5s, delay: 1ms}, {at: 1s, kind: partition, for: 1s, target: all}, {at: 1s, kind: partition, for: 1s, target: node:3}]\n",
			[]string{"faults[0].for: 0s: a partition heals after its length", "faults[1].for: 5s: the partition would outlast the run (ends at 2s)", "faults[1].delay: set: a partition takes at, target and for only", `faults[2].target: "all": use hottest, node:N, slot:N or primary-of:TENANT`, `faults[3].target: "node:3": node:N of a partition names shard N's primary: 0 <= N < 3`}},
		{"partition needs a local cluster", validYAML + "cluster: {provider: running, primaries: 2}\nfaults: [{at: 1s, kind: partition, for: 1s}]\n",
			[]string{`faults[0].kind: partition: a partition cuts the nodes' links through proxies ratelab runs: use cluster.provider: local (provider is "running")`, "set cluster.primaries >= 3"}},
		{"gateway partition", validYAML + "limiter: {gateways: 2}\nfaults: [{at: 1s, kind: partition, for: 1s, target: gateways:3}]\n",
			[]string{`faults[0].target: "gateways:3": use all, gateway:N (0 <= N < 2) or gateways:K`, `a gateway partition cuts gateways that hold state of their own: only limiter.kind lease has it (kind is "token-bucket")`}},
		{"region partition", validYAML + "faults: [{at: 1s, kind: partition, for: 1s, target: region:eu}]\n", []string{`faults[0].target: "region:eu": region:NAME cuts a region off the others: set regions`}},
		{"region partition name", validYAML + "regions: {design: split, list: [{name: us}, {name: asia}]}\nfaults: [{at: 1s, kind: partition, for: 1s, target: region:eu}]\n", []string{`faults[0].target: "region:eu": no such region: use region:NAME with one of us, asia`}},
		{"regions fields", validYAML + "regions: {design: star, list: [{name: a, share: 1}, {name: a, share: -1}], rtt: -1s, period: 1s, affinity: 2}\n",
			[]string{`x.yaml:7: regions.design: "star": use global`, "regions.list: 2 regions: list between 3 and 16 regions", `regions.list[1].name: "a": is listed twice`,
				"regions.list[1].share: -1: must be > 0", "regions.rtt: -1s: must be between 0 and 10s", `regions.period: 1s: only design rebalance has a period (design is "star")`, "regions.affinity: 2: must be in [0, 1]"}},
		{"regions shares all or none", validYAML + "regions: {design: split, list: [{name: a, share: 2}, {name: b}, {name: c}]}\n",
			[]string{"regions.list[1].share: 0: give every region a share > 0, or none (equal shares)"}},
		{"regions rebalance period", validYAML + "regions: {design: rebalance, period: 1ms, list: [{name: a}, {name: b}, {name: c}]}\n",
			[]string{"regions.period: 1ms: the rebalance period must be between 10ms and the run's duration (2s)"}},
		{"regions need the central bucket, process and local clusters", validYAML + "limiter: {kind: gcra}\nvia: http\ncluster: {provider: running}\nregions: {design: split, list: [{name: a}, {name: b}, {name: c}]}\n",
			[]string{`limiter.kind: gcra: regions share the central token bucket's quota: use limiter.kind token-bucket`, "via: http: regions pick each request's gateway in process",
				"cluster.provider: running: design split starts one cluster per region on this machine: use cluster.provider local"}},
		{"regions refuse tariffs", strings.Replace(validYAML, "{rate: 10, burst: 20}", "{file: t.yaml}", 1) + "regions: {design: split, list: [{name: a}, {name: b}, {name: c}]}\n",
			[]string{"policy: tariffs: regions split the one policy (rate, burst) between them"}},
		{"regions global timeout", validYAML + "regions: {design: global, rtt: 60ms, list: [{name: a}, {name: b}, {name: c}]}\n",
			[]string{"limiter.timeout: 50ms: in design global a remote region's every decision takes a round trip (rtt 60ms ± 2 x jitter 5ms): set limiter.timeout above that"}},
		{"wrong type", strings.Replace(validYAML, "{count: 10}", "{count: many}", 1), []string{"line 5", "many"}},
		{"not yaml", "name: [", []string{"x.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("x.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	if _, err := Resolve("smoke"); err != nil {
		t.Errorf("Resolve(smoke): %v", err)
	}
	_, err := Resolve("no-such")
	if err == nil || !strings.Contains(err.Error(), "hot-tenant") {
		t.Errorf("Resolve(no-such) = %v, want an error listing the built-ins", err)
	}
	_, err = Resolve("missing/file.yaml")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Resolve(missing file) = %v, want not found", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(validYAML))
	f.Add([]byte(strings.Replace(validYAML, "{rate: 10, burst: 20}", "{tariffs: {version: 1, plans: {a: {default: {rate: 1, burst: 2}}}, default_plan: a}}", 1)))
	for _, n := range BuiltinNames() {
		data, _ := BuiltinYAML(n)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		// Anything accepted is valid and survives a round trip.
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid spec: %v", err)
		}
		if _, err := Parse("again", s.YAML()); err != nil {
			t.Fatalf("resolved spec does not parse: %v\n%s", err, s.YAML())
		}
	})
}

func TestLimiterFamilyFieldsParse(t *testing.T) {
	t.Parallel()
	twoTier := strings.Replace(validYAML, "{rate: 10, burst: 20}", "{rate: 10, burst: 20, quota: {limit: 500, window: 24h}}", 1) +
		"limiter: {kind: two-tier, gateways: 4}\nfaults: [{at: 1s, kind: clock-skew, target: gateways:2, offset: -2s, for: 500ms}]\n"
	s, err := Parse("x.yaml", []byte(twoTier))
	if err != nil {
		t.Fatal(err)
	}
	if q := s.Policy.Quota; q == nil || q.Limit != 500 || time.Duration(q.Window) != 24*time.Hour || s.Limiter.Clock != ClockGateway || s.GatewayCount() != 4 {
		t.Errorf("two-tier spec = %+v / %+v, want quota 500 per 24h, clock gateway, 4 gateways", s.Policy, s.Limiter)
	}
	if got, _ := GatewayTargets(s.Faults[0].Target, 4); len(got) != 2 || got[1] != 1 || time.Duration(s.Faults[0].Offset) != -2*time.Second {
		t.Errorf("skew fault %+v resolves to gateways %v, want [0 1] with offset -2s", s.Faults[0], got)
	}

	byWindow, err := Parse("x.yaml", []byte(strings.Replace(validYAML, "{rate: 10, burst: 20}", "{limit: 50, window: 2s}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := byWindow.BucketPolicy(); got.Rate != 25 || got.Burst != 50 {
		t.Errorf("limit 50 per 2s as a bucket = %+v, want rate 25 burst 50", got)
	}

	inline := strings.Replace(validYAML, "{rate: 10, burst: 20}", `
  tariffs:
    version: 3
    plans:
      free: {default: {rate: 5, burst: 10}}
      pro: {default: {rate: 50, burst: 100}}
    tenants: {tenant-0: pro}
    default_plan: free`, 1)
	s, err = Parse("x.yaml", []byte(inline))
	if err != nil {
		t.Fatal(err)
	}
	tt, err := s.inlineTariffs()
	if err != nil {
		t.Fatal(err)
	}
	if tt.Version() != 3 || tt.Lookup("tenant-0", "default").Bucket.Burst != 100 || tt.Lookup("tenant-1", "default").Bucket.Burst != 10 {
		t.Errorf("inline tariffs: version %d, tenant-0 %+v, tenant-1 %+v", tt.Version(), tt.Lookup("tenant-0", "default"), tt.Lookup("tenant-1", "default"))
	}
	again, err := Parse("resolved", s.YAML())
	if err != nil || string(again.YAML()) != string(s.YAML()) {
		t.Errorf("inline tariffs do not round-trip: %v\n%s", err, s.YAML())
	}

	// A tariff file is found next to the scenario and written back absolute.
	dir := t.TempDir()
	tariffs := "version: 1\nplans: {free: {default: {rate: 5, burst: 10}}}\ndefault_plan: free\n"
	if err := os.WriteFile(filepath.Join(dir, "tariffs.yaml"), []byte(tariffs), 0o644); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte(strings.Replace(validYAML, "{rate: 10, burst: 20}", "{file: tariffs.yaml}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = LoadFile(scen)
	if err != nil {
		t.Fatal(err)
	}
	if s.Policy.File != filepath.Join(dir, "tariffs.yaml") {
		t.Errorf("policy.file = %q, want it resolved next to the scenario", s.Policy.File)
	}
	if err := os.WriteFile(filepath.Join(dir, "tariffs.yaml"), []byte("version: 1\nplans: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadFile(scen)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:6: policy.file:") || !strings.Contains(err.Error(), "default_plan") {
		t.Errorf("LoadFile with a broken tariff file = %v, want the scenario line and the tariff file's problem", err)
	}
}

// TestWildKindsValidate checks the fields kinds redis-rate and gubernator refuse, by name.
func TestWildKindsValidate(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"limiter: {kind: redis-rate, clock: gateway}\n", "limiter.clock: gateway: kind redis-rate decides at Redis's TIME"},
		{"limiter: {kind: gubernator, gubernator: {behavior: gossip}}\n", `limiter.gubernator.behavior: "gossip": use batching, no-batching or global`},
		{"limiter: {kind: gubernator, gubernator: {daemons: 40}}\n", "limiter.gubernator.daemons: 40: must be between 1 and 16"},
		{"limiter: {kind: gubernator, clock: redis}\n", "limiter.clock: redis: only limiter.kind token-bucket and redis-rate"},
	} {
		_, err := Parse("x.yaml", []byte(validYAML+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
	s, err := Parse("x.yaml", []byte(validYAML+"limiter: {kind: redis-rate}\n"))
	if err != nil || s.Limiter.Clock != ClockRedis {
		t.Fatalf("kind redis-rate without a clock: %v, clock %q, want redis by default", err, s.Limiter.Clock)
	}
}

// TestDaemonFaultsValidate checks the faults of a gubernator daemon, by field, value and fix:
// daemon:N on a Redis kind, a Redis target on gubernator, N out of range, a kind or field a
// daemon has not.
func TestDaemonFaultsValidate(t *testing.T) {
	t.Parallel()
	const guber = "limiter: {kind: gubernator, gubernator: {daemons: 3}}\n"
	for _, tc := range []struct{ yaml, want string }{
		{guber + `faults: [{at: 1s, kind: kill, target: "daemon:1", for: 1s}]` + "\n", ""},
		{guber + `faults: [{at: 0s, kind: pause, target: "daemon:0", for: 1s}, {at: 1s, kind: partition, target: "daemon:2", for: 1s}]` + "\n", ""},
		{`faults: [{at: 1s, kind: pause, target: "daemon:1", for: 1s}]` + "\n", `faults[0].target: "daemon:1": daemon:N names a gubernator daemon; limiter.kind "token-bucket" has a Redis Cluster`},
		{guber + `faults: [{at: 1s, kind: pause, target: hottest, for: 1s}]` + "\n", `faults[0].target: "hottest": limiter.kind gubernator has no Redis Cluster: name a daemon as daemon:N (0 <= N < 3`},
		{guber + `faults: [{at: 1s, kind: kill, target: "daemon:3", for: 1s}]` + "\n", `faults[0].target: "daemon:3": daemon:N needs 0 <= N < 3 (limiter.gubernator.daemons)`},
		{guber + `faults: [{at: 1s, kind: latency, target: "daemon:0", delay: 5ms, for: 1s}]` + "\n", "faults[0].kind: latency: a gubernator daemon's faults are kill"},
		{guber + `faults: [{at: 1s, kind: kill, target: "daemon:0"}]` + "\n", "faults[0].for: 0s: a kill of a daemon ends after its length"},
		{guber + `faults: [{at: 1s, kind: pause, target: "daemon:0", for: 5s}]` + "\n", "faults[0].for: 5s: the pause would outlast the run (ends at 2s)"},
		{`faults: [{at: 1s, kind: kill, target: hottest}]` + "\n", "faults[0].kind: kill: kill acts on a gubernator daemon (limiter.kind gubernator, target daemon:N): on a Redis Cluster use kill-primary"},
	} {
		s, err := Parse("t", []byte(validYAML+tc.yaml))
		if err == nil {
			err = s.Validate()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.yaml, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
