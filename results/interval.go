package results

// Interval is one row of timeseries.csv: what happened during one second of the run. Counts are
// decisions started (offered, sent, dropped) or completed (the rest) in that second; latencies
// are in milliseconds from the per-second HDR histogram, 0 when the second completed nothing.
type Interval struct {
	// TS is the start of the interval, in seconds since the start of the load (column t_s).
	TS float64
	// Offered is the number of requests the pacer scheduled in this second.
	Offered int64
	// Sent is the number of requests started (Offered - Dropped).
	Sent int64
	// Dropped is the number of requests not started because MaxInflight were in flight.
	Dropped int64
	// Allowed is the number of decisions that allowed the request.
	Allowed int64
	// Denied is the number of decisions that denied the request.
	Denied int64
	// Errors is the number of decisions that ended in an error.
	Errors int64
	// Timeout is the number of store calls that timed out.
	Timeout int64
	// Moved is the number of MOVED redirects.
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
	// CentralOps is the number of operations that reached the shared store.
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
	// FalseDenies is the number of denied requests the envelope had tokens for.
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
}

// column is one CSV column: its header name and a pointer to its field (exactly one of i, f).
type column struct {
	name string
	i    func(*Interval) *int64
	f    func(*Interval) *float64
}

// columns is the CSV layout, in file order. The first requiredColumns are fixed by DESIGN.md;
// the rest may be missing from files written by older versions (they read as 0).
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
}

// requiredColumns is how many leading columns every timeseries.csv must have (DESIGN.md).
const requiredColumns = 17

// TimeseriesColumns returns the CSV header names in file order.
func TimeseriesColumns() []string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.name
	}
	return names
}
