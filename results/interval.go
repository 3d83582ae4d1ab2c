package results

import "time"

// Interval is one row of timeseries.csv: what happened during one second of the run. A request
// belongs to the second of its intended start (the pacer's schedule), whenever it completes:
// offered, sent and dropped are booked there by the dispatcher, and a decision's outcome, verdict
// and latency are booked there when it completes. The row is written once the second's decisions
// are done or it has waited for them as long as the engine allows; decisions that complete later
// count only in the summary's totals. Latencies are in milliseconds from the second's HDR
// histogram, 0 when no decision of the second was booked.
//
// The per-second percentiles are over the second's SERVED (decided) requests (the summary's
// latency_served_ms, second by second), not over its offered ones as the summary's latency_ms:
// a second's undecided requests show beside them, in Dropped and Errors and in the
// dropped_share column (DroppedShare), so a second whose p99 is small while a third of its
// requests got no decision reads as such. (SecondLatency gives the second's percentiles over
// its offered requests, with the summary's function.)
//
// In a merged run (Merge) the counts are the sums of the inputs' rows (faults and policy version
// their largest) and the latencies come from their merged histograms.
type Interval struct {
	// TS is the start of the interval, in seconds since the start of the load (column t_s).
	TS float64
	// Offered is the number of this generator's requests whose intended start falls in this
	// second (with ratelab run --part, only the tenants this generator runs).
	Offered int64
	// Sent is the number of those requests started (Offered - Dropped). In a black-box attack
	// (run/attack) it is the number of them that were answered.
	Sent int64
	// Dropped is the number of those requests the generator did not start: MaxInflight requests
	// were already in flight, or the dispatcher had fallen further behind the schedule than the
	// engine allows (the summary's note says how many of each). In a black-box attack it is
	// Offered - Sent, the requests never answered, in rows written once the attack is over (0
	// in rows written while it runs).
	Dropped int64
	// Allowed is the number of decisions that allowed the request.
	Allowed int64
	// Denied is the number of decisions that denied the request.
	Denied int64
	// Errors is the number of requests that ended in an error no fail policy answered: no
	// decision.
	Errors int64
	// Timeout is the number of store calls that timed out: decisions that ended in a timeout,
	// plus store timeouts a fail policy answered, the latter booked in the second of the
	// request's time as the limiter saw it (limiter.Request.Now). ClusterDown, TryAgain, Conn and
	// Other count the same way.
	Timeout int64
	// Moved is the number of MOVED redirects. With Redis the node hooks count every one (those
	// the cluster client followed too) in the second of the request that met it (for a
	// pipelined batch, of one of its requests); without Redis it is the decisions that ended in
	// one. Ask and NoScript count the same way.
	Moved int64
	// Ask is the number of ASK redirects.
	Ask int64
	// NoScript is the number of NOSCRIPT replies.
	NoScript int64
	// ClusterDown is the number of CLUSTERDOWN replies.
	ClusterDown int64
	// P50Ms is the median latency in this second, in ms.
	P50Ms float64
	// P99Ms is the 99th percentile latency in this second, in ms.
	P99Ms float64
	// P999Ms is the 99.9th percentile latency in this second, in ms.
	P999Ms float64
	// Overspend is the number of allowed requests beyond the envelope in this second.
	Overspend int64
	// CentralOps is, when the limiter runs on Redis, the number of this second's decision
	// commands, as the summary's central.ops counts them over the run: a decision's EVALSHA (or
	// EVAL), its retry after NOSCRIPT, a lease fetch. In lease mode most decisions make none. 0
	// without Redis.
	CentralOps int64
	// FailedOpen is the number of requests let through because the store failed.
	FailedOpen int64
	// FailedClosed is the number of requests denied because the store failed.
	FailedClosed int64
	// TryAgain is the number of TRYAGAIN replies.
	TryAgain int64
	// Conn is the number of connection errors.
	Conn int64
	// Other is the number of other errors.
	Other int64
	// FalseDenies is the number of denied requests the envelope had tokens for, less (floored at
	// 0) the provisional ones it had taken back as reordering by the time the row was written,
	// which are booked in the second of the request's time as the envelope saw it. Later
	// withdrawals show only in the summary.
	FalseDenies int64
	// MaxMs is the largest latency in this second, in ms.
	MaxMs float64
	// P90Ms is the 90th percentile latency in this second, in ms.
	P90Ms float64
	// Faults is the number of faults injected in this second (see summary.json faults[]).
	Faults int64
	// PolicyVersion is the version of the tariffs live at the end of this second (0 when the
	// run has no tariffs), so a reload shows in the row where the new limits took effect.
	PolicyVersion int64
	// Late is the number of this second's decisions answered after the run's window ended: in
	// the row's outcomes and in the summary's load.late, not in its achieved rate.
	Late int64
	// Unreplicated is the number of store calls whose debit is not known replicated: an allowed
	// decision's WAIT that came back short, or a write the primary refused with NOREPLICAS
	// (min-replicas-to-write); counted as Timeout is.
	Unreplicated int64
	// Unknown is the number of the second's requests the store may have debited although its
	// answer never reached the client (a timeout, a connection lost after the write, a fail
	// policy's answer to one): the unknown outcomes of the summary's overspend, second by second.
	Unknown int64
	// WaitShort is the number of the store's denials whose WAIT (limiter.durability) came back
	// short of its replicas: a denial debited nothing, and stands.
	WaitShort int64
	// Time is the wall-clock start of the second, the run's start plus TS (column time_utc: RFC
	// 3339 in UTC to the millisecond), so a row lines up with a dashboard's clock. Zero when the
	// writer did not know the run's start, and in files written before the column (an empty
	// field). In a merged run it is the earliest part's.
	Time time.Time
}

// Served is the number of the second's requests that got a decision: allowed, denied, failed
// open and failed closed — never an error. It is the count of the second's latency histogram.
func (iv *Interval) Served() int64 {
	return iv.Allowed + iv.Denied + iv.FailedOpen + iv.FailedClosed
}

// Achieved is the number of the second's requests decided within the run's window: Served less
// the late answers. The achieved rate of a second, and of a run (load.achieved_rps), counts
// these and nothing else.
func (iv *Interval) Achieved() int64 { return max(iv.Served()-iv.Late, 0) }

// Undecided is the number of the second's offered requests that got no decision (dropped, or an
// error): the failures of its latency over offered requests.
func (iv *Interval) Undecided() int64 { return max(iv.Offered-iv.Served(), 0) }

// DroppedShare is Dropped / Offered: the share of the second's offered requests the generator
// dropped, 0 when nothing was offered. It is the dropped_share column of timeseries.csv, written
// from the counts (never stored apart, so it cannot disagree with them).
func (iv *Interval) DroppedShare() float64 { return Ratio(iv.Dropped, iv.Offered) }

// column is one CSV column: its header name and a pointer to its field, or for a column derived
// from other columns the function that computes it (exactly one of i, f, d, t).
type column struct {
	name string
	i    func(*Interval) *int64
	f    func(*Interval) *float64
	d    func(*Interval) float64
	t    func(*Interval) *time.Time
}

// columns is the CSV layout, in file order. Every reader relies on the first requiredColumns;
// the rest are optional when reading (a file without them reads as 0 there). New columns go at
// the end, so that readers of older files, and older readers of newer files, keep working:
// late, dropped_share and time_utc came last, so files written before them lack them. A derived column
// (d) is written for other readers (a spreadsheet, pandas); ReadTimeseries checks its number
// and computes the value from the counts instead.
var columns = [...]column{
	{name: "t_s", f: func(r *Interval) *float64 { return &r.TS }},
	{name: "offered", i: func(r *Interval) *int64 { return &r.Offered }},
	{name: "sent", i: func(r *Interval) *int64 { return &r.Sent }},
	{name: "dropped", i: func(r *Interval) *int64 { return &r.Dropped }},
	{name: "allowed", i: func(r *Interval) *int64 { return &r.Allowed }},
	{name: "denied", i: func(r *Interval) *int64 { return &r.Denied }},
	{name: "errors", i: func(r *Interval) *int64 { return &r.Errors }},
	{name: "timeout", i: func(r *Interval) *int64 { return &r.Timeout }},
	{name: "moved", i: func(r *Interval) *int64 { return &r.Moved }},
	{name: "ask", i: func(r *Interval) *int64 { return &r.Ask }},
	{name: "noscript", i: func(r *Interval) *int64 { return &r.NoScript }},
	{name: "clusterdown", i: func(r *Interval) *int64 { return &r.ClusterDown }},
	{name: "p50_ms", f: func(r *Interval) *float64 { return &r.P50Ms }},
	{name: "p99_ms", f: func(r *Interval) *float64 { return &r.P99Ms }},
	{name: "p999_ms", f: func(r *Interval) *float64 { return &r.P999Ms }},
	{name: "overspend", i: func(r *Interval) *int64 { return &r.Overspend }},
	{name: "central_ops", i: func(r *Interval) *int64 { return &r.CentralOps }},
	{name: "failed_open", i: func(r *Interval) *int64 { return &r.FailedOpen }},
	{name: "failed_closed", i: func(r *Interval) *int64 { return &r.FailedClosed }},
	{name: "tryagain", i: func(r *Interval) *int64 { return &r.TryAgain }},
	{name: "conn", i: func(r *Interval) *int64 { return &r.Conn }},
	{name: "other", i: func(r *Interval) *int64 { return &r.Other }},
	{name: "false_denies", i: func(r *Interval) *int64 { return &r.FalseDenies }},
	{name: "max_ms", f: func(r *Interval) *float64 { return &r.MaxMs }},
	{name: "p90_ms", f: func(r *Interval) *float64 { return &r.P90Ms }},
	{name: "faults", i: func(r *Interval) *int64 { return &r.Faults }},
	{name: "policy_version", i: func(r *Interval) *int64 { return &r.PolicyVersion }},
	{name: "late", i: func(r *Interval) *int64 { return &r.Late }},
	{name: "dropped_share", d: (*Interval).DroppedShare},
	{name: "time_utc", t: func(r *Interval) *time.Time { return &r.Time }},
	{name: "unreplicated", i: func(r *Interval) *int64 { return &r.Unreplicated }},
	{name: "unknown", i: func(r *Interval) *int64 { return &r.Unknown }},
	{name: "wait_short", i: func(r *Interval) *int64 { return &r.WaitShort }},
}

// requiredColumns is how many leading columns every timeseries.csv must have.
const requiredColumns = 17

// TimeseriesColumns returns the CSV header names in file order.
func TimeseriesColumns() []string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.name
	}
	return names
}
