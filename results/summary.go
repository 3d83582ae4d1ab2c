package results

import "time"

// SchemaSummary is the schema of the summaries this package writes: the definitions of
// docs/metrics.md.
const SchemaSummary = "ratelab.summary/v4"

// SchemaSummaryV3 is the schema of summaries written before a false deny had to be false for the
// allowed stream as it happened too: after an overspend on a key, v3 counted every later refusal
// the envelope (which does not debit an overspent request) still had tokens for, so one
// overspend could read as dozens of false denies. Every other figure means what v4's does.
// ReadSummary reads it as it is and keeps its schema (see OldDefinitions); Merge and compare
// refuse to set it against v4.
const SchemaSummaryV3 = "ratelab.summary/v3"

// V3Note is what a reader of a v3 summary says beside its numbers.
const V3Note = "summary v3: false denies include refusals after an overspend that the overspend explains (old definition)"

// SchemaSummaryV2 is the schema of summaries written before one classification of outcomes:
// served latency over every answered request, errors included, with only the generator's drops
// counted as failures over offered requests; unknown outcomes counting timeouts without a fail
// policy only; a WAIT short of its replicas counted as an unreplicated error. ReadSummary reads
// it into the same struct and keeps Schema = SchemaSummaryV2 (see OldDefinitions); Merge and
// compare refuse to set it against v4 (or v3).
const SchemaSummaryV2 = "ratelab.summary/v2"

// V2Note is what a reader of a v2 summary says beside its numbers.
const V2Note = "summary v2: served latency includes errors, unknown outcomes exclude a fail policy's answers (old definitions)"

// SchemaSummaryV1 is the schema of summaries written before the definitions of docs/metrics.md:
// latency over answered requests only, overspend without ranges over unknown outcomes, a bound
// on the whole run's overspend, central operations counting every command. ReadSummary maps it
// into the v2 struct and keeps Schema = SchemaSummaryV1, so every reader can tell (see V1);
// WriteSummary writes such a summary back in the v1 layout; Merge and compare refuse to set it
// against v2.
const SchemaSummaryV1 = "ratelab.summary/v1"

// V1Note is what a reader of a v1 summary says beside its numbers: the report, the text summary,
// a merge's note and compare.
const V1Note = "summary v1: latency over answered requests only, overspend without ranges (old definitions)"

// Summary is summary.json: the whole run in one record. The JSON names are the contract with
// every reader (report, compare, CI jobs); they are snake_case and never renamed, as a renamed
// field would read as absent. Counts are decisions (one decision = one request to the limiter)
// unless a field says tokens.
type Summary struct {
	// Schema is SchemaSummary, or SchemaSummaryV1 in a summary read from a v1 file: then the
	// v2-only fields are zero and the latency fields hold v1's latency over answered requests
	// (see ReadSummary). Any other value is rejected by ReadSummary and replaced by SchemaSummary
	// when written.
	Schema string `json:"schema"`
	// Scenario is the scenario's name (a built-in name or the spec's name field).
	Scenario string `json:"scenario"`
	// Seed is the random seed the run used; the same seed replays the same key sequence.
	Seed int64 `json:"seed"`
	// StartedAt is the wall-clock time the load started (RFC 3339 with nanoseconds in JSON).
	StartedAt time.Time `json:"started_at"`
	// DurationS is how long the load ran, in seconds (shorter than planned if Interrupted).
	DurationS float64 `json:"duration_s"`
	// Interrupted is true when the run stopped early (SIGINT, SIGTERM, fatal error).
	Interrupted bool `json:"interrupted"`
	// Environment describes where the numbers were measured.
	Environment Environment `json:"environment"`
	// Load compares the offered rate with what the generator achieved.
	Load Load `json:"load"`
	// Outcomes counts decisions by outcome.
	Outcomes Outcomes `json:"outcomes"`
	// Errors counts failed calls to the store by kind.
	Errors Errors `json:"errors"`
	// LatencyMs holds the whole run's latency percentiles over every offered request, measured
	// from each request's intended start; a dropped request counts as slower than any latency.
	LatencyMs Latency `json:"latency_ms"`
	// LatencyServedMs holds the percentiles of the answered requests only: what the limiter took
	// for the requests it got.
	LatencyServedMs ServedLatency `json:"latency_served_ms"`
	// LatencyClamped counts latencies beyond the histogram's range, recorded at its maximum.
	LatencyClamped int64 `json:"latency_clamped"`
	// Overspend is the correctness headline: requests allowed beyond the policy's envelope.
	Overspend Overspend `json:"overspend"`
	// Central counts the commands the Redis nodes received: decision commands and the others.
	Central Central `json:"central"`
	// HotKeys lists the keys that took the largest shares of decisions, largest first.
	HotKeys []HotKey `json:"hot_keys"`
	// HeaderHonesty is set by HTTP attacks whose target sent rate-limit headers: the lies
	// found in them by kind.
	HeaderHonesty *HeaderHonesty `json:"header_honesty,omitempty"`
	// Nodes is what each Redis node's client saw: commands, redirects and NOSCRIPT replies.
	Nodes []NodeStats `json:"nodes"`
	// Process is ratelab's own footprint: memory and goroutines after warm-up and at the end.
	Process Process `json:"process"`
	// CPU is where the machine's cores went during the load: the generator, each node, the
	// rest; absent where it was not measured (a merge of parts, an HTTP attack).
	CPU *CPU `json:"cpu,omitempty"`
	// Faults lists the injected faults in schedule order.
	Faults []Fault `json:"faults"`
	// TokensBack counts the debits faults returned, where the run audited its buckets
	// (limiter.audit); absent otherwise.
	TokensBack *TokensBack `json:"tokens_back,omitempty"`
	// Regions is a multi-region run's account per region; absent in a one-region run.
	Regions *Regions `json:"regions,omitempty"`
	// SLO holds the pass/fail verdict of the scenario's SLO checks.
	SLO SLO `json:"slo"`
	// Stages is set when the load followed stages (load.stages): the offered rate at which each
	// per-second SLO check first failed; absent otherwise.
	Stages *Stages `json:"stages,omitempty"`
	// Part is set when the run is one of several generators (ratelab run --part i/N) or a
	// merge of them (ratelab merge); absent for a single generator.
	Part *Part `json:"part,omitempty"`
}

// Part says which part of a split load a run holds (see docs/distributed.md).
type Part struct {
	// Index is the generator's part, 0 <= Index < Count; -1 in a merged run.
	Index int `json:"index"`
	// Count is the number of generators the tenants were split between.
	Count int `json:"count"`
	// Merged lists the parts a merged run combines; empty in one generator's run.
	Merged []int `json:"merged,omitempty"`
	// Missing lists the parts of Count a merged run lacks: its totals cover Merged only.
	Missing []int `json:"missing,omitempty"`
}

// Environment describes the machine, the cluster and the build that produced a run.
type Environment struct {
	// RedisVersion is the redis_version the nodes report, e.g. "7.0.15".
	RedisVersion string `json:"redis_version"`
	// Provider is the cluster provider: "local", "docker" or "external".
	Provider string `json:"provider"`
	// Primaries is the number of primary nodes in the cluster.
	Primaries int `json:"primaries"`
	// Replicas is the number of replicas per primary (a 3x1 cluster has Primaries 3, Replicas 1),
	// the topology notation of scenarios and `ratelab cluster up`.
	Replicas int `json:"replicas"`
	// Cores is the number of CPU cores the generator saw (runtime.NumCPU).
	Cores int `json:"cores"`
	// Go is the Go version the binary was built with (runtime.Version).
	Go string `json:"go"`
	// Ratelab is the ratelab version (set with -ldflags at build time; "dev" otherwise).
	Ratelab string `json:"ratelab"`
	// Mode says how decisions were made, e.g. "central" (one store call per decision) or
	// "lease" (local decisions from leased tokens), so readers know which one was measured.
	Mode string `json:"mode"`
	// Via is how requests reached the limiter: "http" for a scenario run through ratelab's
	// gateway (via: http); empty for in-process runs.
	Via string `json:"via,omitempty"`
	// Durability is how the limiter's debits were made durable: "async" (replication as
	// Redis does it), "wait" (WAIT after each decision), "wait-pipeline" (WAIT after each
	// pipeline) or "min-replicas" (the primaries' min-replicas-to-write); empty means async.
	Durability string `json:"durability,omitempty"`
}

// Load compares the offered load with what the generator could send. An open-loop run whose
// achieved rate is below the offered rate measured the machine, not the limiter; Note says so.
type Load struct {
	// OfferedRPS is Offered / the schedule's length in seconds (the run's window: its duration,
	// or the part an interrupted run covered).
	OfferedRPS float64 `json:"offered_rps"`
	// AchievedRPS is the decisions answered within the run's window / its length: late answers
	// are not in it.
	AchievedRPS float64 `json:"achieved_rps"`
	// Offered is the number of requests the schedule offered (sent + dropped).
	Offered int64 `json:"offered"`
	// Completed is the number of requests that ended, in a decision or an error (late ones
	// too). The JSON keeps the name decisions, though an error is no decision.
	Completed int64 `json:"decisions"`
	// Late is the number of requests that ended after the run's window (in Completed, not in
	// AchievedRPS).
	Late int64 `json:"late"`
	// Sent is the number of requests started (offered minus dropped); in a black-box attack
	// (run/attack), the number answered.
	Sent int64 `json:"sent"`
	// Dropped is the number of requests the generator did not start: MaxInflight requests were
	// already in flight, or the dispatcher had fallen further behind its schedule than the engine
	// allows (DroppedInflight and DroppedBehind say how many of each). In a black-box attack it
	// is the requests offered but never answered. They are counted, never silently skipped.
	Dropped int64 `json:"dropped"`
	// DroppedInflight and DroppedBehind split Dropped by cause: MaxInflight requests were in
	// flight, or the dispatcher was further behind its schedule than the engine allows.
	DroppedInflight int64 `json:"dropped_inflight"`
	DroppedBehind   int64 `json:"dropped_behind"`
	// LostSeconds counts per-second rows the collector could not write in order (their counts
	// are in the totals); 0 in a sound run.
	LostSeconds int64 `json:"lost_seconds"`
	// MaxInflight is the bound on requests in flight.
	MaxInflight int `json:"max_inflight"`
	// Concurrency is the number of workers (callers) issuing requests.
	Concurrency int `json:"concurrency"`
	// GeneratorLimited is true when the generator, not the limiter, capped the run: it did not
	// keep its schedule (Limit is LimitGenerator; see Load.JudgeLimit). A merged run is
	// generator-limited when any input was.
	GeneratorLimited bool `json:"generator_limited"`
	// Limit names what held the run below its schedule: LimitNone, LimitGenerator or
	// LimitLimiter (a slow limiter or store); "" in a summary written before it. A merged run
	// takes the worst of its parts'.
	Limit Limit `json:"limit,omitempty"`
	// ScheduleLagP99Ms is the 99th percentile of how late the generator dispatched requests
	// after their intended start, in ms. It is part of every latency (measured from the intended
	// start); a large value means the generator, not the limiter, was slow.
	ScheduleLagP99Ms float64 `json:"schedule_lag_p99_ms"`
	// Notes say in words what a reader needs beside the numbers — why achieved < offered, what
	// the lease layer or the tariffs did, what a part is a part of — one typed entry each, in
	// the order the run added them (AddNote). Absent in files of older schemas.
	Notes []Note `json:"notes,omitempty"`
	// Note is Notes' texts joined with "; " (AddNote keeps it so), or an older file's note.
	Note string `json:"note"`
}

// Outcomes counts completed requests by outcome; the five counts (WaitShort aside, which is within
// Allowed and Denied) sum to Load.Completed.
type Outcomes struct {
	// Allowed is the number of decisions that let the request through (central or lease).
	Allowed int64 `json:"allowed"`
	// Denied is the number of decisions that rejected the request (a 429).
	Denied int64 `json:"denied"`
	// FailedOpen is the number of requests let through because the store failed.
	FailedOpen int64 `json:"failed_open"`
	// FailedClosed is the number of requests denied because the store failed.
	FailedClosed int64 `json:"failed_closed"`
	// Errors is the number of requests that ended in an error no fail policy answered: no
	// decision.
	Errors int64 `json:"errors"`
	// WaitShort is the number of the store's denials (in Denied) whose WAIT (limiter.durability
	// wait modes) came back short of its replicas: a denial debited nothing, and stands. (An
	// allowed decision's short WAIT is an unreplicated error: Errors.Unreplicated.)
	WaitShort int64 `json:"wait_short,omitempty"`
}

// Errors counts failed store calls by kind (the prefix of the Redis error reply, or the
// client-side failure): those that ended the decision in an error and those a fail policy
// answered. MOVED and ASK are redirects the client followed; they are counted on the per-node
// clients even when the decision itself succeeded.
type Errors struct {
	// Timeout: the call exceeded its deadline.
	Timeout int64 `json:"timeout"`
	// Moved: MOVED redirects (the slot lives on another node).
	Moved int64 `json:"moved"`
	// Ask: ASK redirects (the slot is migrating).
	Ask int64 `json:"ask"`
	// TryAgain: TRYAGAIN replies (multi-key operation during resharding).
	TryAgain int64 `json:"tryagain"`
	// ClusterDown: CLUSTERDOWN replies (the cluster is not serving the slot).
	ClusterDown int64 `json:"clusterdown"`
	// NoScript: NOSCRIPT replies (the script cache was empty, e.g. on a promoted replica).
	NoScript int64 `json:"noscript"`
	// Conn: connection errors (refused, reset, closed pool).
	Conn int64 `json:"conn"`
	// Unreplicated: allowed decisions whose debit was made on the primary but is not known
	// replicated (limiter.durability wait modes: WAIT acknowledged fewer replicas than asked),
	// and writes the primary refused with NOREPLICAS (min-replicas-to-write). A denial whose WAIT
	// came back short is no error: outcomes.wait_short.
	Unreplicated int64 `json:"unreplicated"`
	// Other: every other error.
	Other int64 `json:"other"`
}

// Total is the sum of all error kinds.
func (e Errors) Total() int64 {
	return e.Timeout + e.Moved + e.Ask + e.TryAgain + e.ClusterDown + e.NoScript + e.Conn + e.Unreplicated + e.Other
}

// Central counts the operations that made or refilled decisions on the shared store: a
// decision's EVALSHA (or EVAL), its retry after NOSCRIPT, a lease fetch. Every other command the
// nodes received (PING, SCRIPT LOAD, CLUSTER SLOTS, ASKING...) is in OtherOps. In a summary read
// from a v1 file Ops counts every command and OtherOps is 0.
type Central struct {
	// Ops is the number of decision operations.
	Ops int64 `json:"ops"`
	// OpsPerS is Ops divided by the run's duration, in operations per second.
	OpsPerS float64 `json:"ops_per_s"`
	// OtherOps is the number of other commands the nodes received.
	OtherOps int64 `json:"other_ops"`
}

// Process is the generator's own footprint, to catch leaks in long runs.
type Process struct {
	// Settled says each sample below was read right after a collection that returned every free
	// page to the OS (debug.FreeOSMemory): what the process holds, not how far the collector's
	// cycle had got. Runs whose SLO judges memory (rss_growth, heap_growth) settle; others read
	// raw RSS and the live heap the last collection marked, so the samples do not stall the load.
	// Absent (false) in those runs.
	Settled bool `json:"settled,omitempty"`
	// RSSWarmMB and RSSEndMB are the resident set size after warm-up (at WarmS: a tenth of the
	// run, or the scenario's slo.warmup) and at the end.
	WarmS     float64 `json:"warm_s,omitempty"`
	RSSWarmMB float64 `json:"rss_warm_mb"`
	RSSEndMB  float64 `json:"rss_end_mb"`
	// AnonWarmMB and AnonEndMB are the anonymous part of the same RSS samples (RssAnon on Linux;
	// 0 elsewhere): what the process allocated, without the binary's code pages that new code
	// paths fault in; it also grows as pages of memory allocated at the start are first written
	// (Go hands out large zeroed arrays as untouched pages).
	AnonWarmMB float64 `json:"rss_anon_warm_mb,omitempty"`
	AnonEndMB  float64 `json:"rss_anon_end_mb,omitempty"`
	// RSSPeakMB is the highest resident set size of the process up to the end of the run
	// (VmHWM on Linux; 0 elsewhere): the memory to provision for the generator.
	RSSPeakMB float64 `json:"rss_peak_mb,omitempty"`
	// RSSMidMB and AnonMidMB are the same samples halfway from warm-up to the end (at MidS) of
	// a run of 20 s or more (0 otherwise): growth from there to the end separates a leak, which
	// keeps growing, from a one-time step after the first transient peaks.
	MidS      float64 `json:"mid_s,omitempty"`
	RSSMidMB  float64 `json:"rss_mid_mb,omitempty"`
	AnonMidMB float64 `json:"rss_anon_mid_mb,omitempty"`
	// RSSEarlyMB and AnonEarlyMB are the same samples at a tenth of the run (at EarlyS) when the
	// scenario's warm-up ends later (0 otherwise): the step from there to warm-up is what the
	// warm-up's faults grew the process by once.
	EarlyS      float64 `json:"early_s,omitempty"`
	RSSEarlyMB  float64 `json:"rss_early_mb,omitempty"`
	AnonEarlyMB float64 `json:"rss_anon_early_mb,omitempty"`
	// HeapWarmMB and HeapEndMB are the live Go heap at the same two moments (after a forced GC
	// when Settled, else as the last collection marked it): unlike RSS they do not grow with the
	// collector's headroom, so growth here is a leak.
	HeapWarmMB float64 `json:"heap_warm_mb"`
	HeapEndMB  float64 `json:"heap_end_mb"`
	// GoroutinesWarm and GoroutinesEnd count goroutines at the same two moments (the end is
	// taken after the workers stopped).
	GoroutinesWarm int `json:"goroutines_warm"`
	GoroutinesEnd  int `json:"goroutines_end"`
	// Warm and End split the Go runtime's memory at the same two samples, to tell where RSS
	// growth went when the live heap stayed flat; nil when the run took no such sample (a
	// black-box attack) or the file does not hold them.
	Warm *MemSplit `json:"mem_warm,omitempty"`
	End  *MemSplit `json:"mem_end,omitempty"`
}

// MemSplit is the memory the Go runtime accounts for at one sample, in MiB.
type MemSplit struct {
	// HeapInuseMB is the heap's spans in use: live objects and the free slots between them
	// (HeapInuseMB - the live heap is fragmentation that no collection returns).
	HeapInuseMB float64 `json:"heap_inuse_mb"`
	// StacksMB is goroutine stack memory in use.
	StacksMB float64 `json:"stacks_mb"`
	// RuntimeMB is the runtime's own structures: span and GC metadata, profiling buckets,
	// other off-heap allocations (reserved, not all of it resident).
	RuntimeMB float64 `json:"runtime_mb"`
}

// NodeStats is one node's share of the run, counted by a hook on its go-redis client.
type NodeStats struct {
	// Addr is the node's address.
	Addr string `json:"addr"`
	// Ops counts the commands the node received from the run's clients: decision commands and
	// the others alike.
	Ops int64 `json:"ops"`
	// Share is Ops / the sum of every node's Ops, in [0, 1].
	Share float64 `json:"share"`
	// Moved, Ask, NoScript, TryAgain and ClusterDown count those replies from the node; Timeout
	// and Conn the calls to it that timed out or lost their connection.
	Moved       int64 `json:"moved"`
	Ask         int64 `json:"ask"`
	NoScript    int64 `json:"noscript"`
	TryAgain    int64 `json:"tryagain"`
	ClusterDown int64 `json:"clusterdown"`
	Timeout     int64 `json:"timeout"`
	Conn        int64 `json:"conn"`
}

// HotKey is one of the keys that took the largest shares of decisions.
type HotKey struct {
	// Key is the limiter key, e.g. "rl:{t42}:search".
	Key string `json:"key"`
	// Share is the key's decisions / the decisions of every key, in [0, 1]. Every decision counts
	// for its key, errors included; in a black-box attack, every answer tied to its tenant.
	Share float64 `json:"share"`
	// Node is the address of the primary that served the key's slot, e.g. "127.0.0.1:7001".
	Node string `json:"node"`
}

// Fault is one injected fault. Times are seconds since the start of the load; DetectedS and
// RecoveredS are 0 when the event was not observed during the run.
type Fault struct {
	// AtS is when the fault was injected, in seconds since the start.
	AtS float64 `json:"at_s"`
	// Kind is the fault primitive: "kill", "pause", "latency", "failover", "reshard"...
	Kind string `json:"kind"`
	// Target names the node or slot range the fault hit.
	Target string `json:"target"`
	// ForS is how long the fault lasted, in seconds, for faults that last (pause, latency,
	// clock-skew); 0 for instant ones (kill, restart, failover, script-flush).
	ForS float64 `json:"for_s,omitempty"`
	// DetectedS is when the cluster (or client) first noticed, in seconds since the start.
	DetectedS float64 `json:"detected_s"`
	// RecoveredS is when decisions succeeded again, in seconds since the start.
	RecoveredS float64 `json:"recovered_s"`
	// Failed is true when the fault could not be carried out (Error says why): the run did not
	// test what its scenario asked, and exits with code 4. In a merged run a fault failed when it
	// failed in any part, and Error names the part.
	Failed bool   `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Seen reports whether the generator saw the fault: some decision failed because of it.
func (f Fault) Seen() bool { return f.DetectedS > 0 || f.RecoveredS > 0 }

// RecoveredAfterS is how long after the fault ended — its injection, or for a lasting fault its
// end (AtS + ForS) — decisions succeeded again, in seconds (0 when they did at once); ok is
// false when they never did within the run, or when no decision failed (see Seen).
func (f Fault) RecoveredAfterS() (s float64, ok bool) {
	if f.RecoveredS <= 0 {
		return 0, false
	}
	return max(f.RecoveredS-f.AtS-f.ForS, 0), true
}

// SLO is the verdict of the scenario's SLO checks.
type SLO struct {
	// Pass is true when every check passed (true when there are no checks).
	Pass bool `json:"pass"`
	// Checks are the individual checks in spec order.
	Checks []Check `json:"checks"`
}

// Check is one SLO check: Value measured against Limit.
type Check struct {
	// Name says what is checked and which way, e.g. "p99_ms <=" or "overspend.ratio <=".
	Name string `json:"name"`
	// Limit is the threshold from the spec.
	Limit float64 `json:"limit"`
	// Value is the measured value; +Inf when it is not measurable (a latency percentile that fell
	// among the dropped requests), written as JSON null.
	Value float64 `json:"value"`
	// Pass is the check's verdict.
	Pass bool `json:"pass"`
}

// NewSummary returns a Summary with the schema set and every list and map empty (not null), so
// that a summary written before the run finishes is still well-formed.
func NewSummary(scenario string, seed int64, startedAt time.Time) *Summary {
	s := &Summary{Scenario: scenario, Seed: seed, StartedAt: startedAt}
	s.normalize()
	return s
}

// Ratio returns num/den, or 0 when den is 0: the convention for every ratio and share of a
// summary, e.g. Overspend.Ratio (requests / (allowed + failed open)) and
// Overspend.FalseDenyRatio (false denies / (denied + failed closed)).
func Ratio(num, den int64) float64 {
	if den == 0 {
		return 0
	}
	return float64(num) / float64(den)
}

// V1 reports whether s was read from a v1 file: its latency is over answered requests only, its
// overspend has no ranges, and its bound is v1's (see SchemaSummaryV1 and V1Note).
func (s *Summary) V1() bool { return s.Schema == SchemaSummaryV1 }

// OldDefinitions is the note a reader shows beside a summary read from an older schema's file
// (V1Note, V2Note, V3Note), "" for a summary of this schema.
func (s *Summary) OldDefinitions() string {
	switch s.Schema {
	case SchemaSummaryV1:
		return V1Note
	case SchemaSummaryV2:
		return V2Note
	case SchemaSummaryV3:
		return V3Note
	}
	return ""
}

// normalize sets the schema (an older file's stays) and replaces nil lists and maps with empty
// ones, so JSON readers see [] and {} rather than null.
func (s *Summary) normalize() {
	switch s.Schema {
	case SchemaSummaryV1, SchemaSummaryV2, SchemaSummaryV3:
	default:
		s.Schema = SchemaSummary
	}
	if s.Nodes == nil {
		s.Nodes = []NodeStats{}
	}
	if s.HotKeys == nil {
		s.HotKeys = []HotKey{}
	}
	if s.Faults == nil {
		s.Faults = []Fault{}
	}
	if s.SLO.Checks == nil {
		s.SLO.Checks = []Check{}
	}
	if s.Overspend.ByCause == nil {
		s.Overspend.ByCause = map[string]int64{}
	}
	if s.Overspend.Bound.Sources == nil {
		s.Overspend.Bound.Sources = map[string]float64{}
	}
}
