package engine

import (
	"time"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/results"
	"ratelab/workload"
)

// Options are the knobs of one run that are not part of the scenario.
type Options struct {
	// Out is the run directory; default out/<scenario>-<yyyymmdd-hhmmss>.
	Out string
	// Version is ratelab's version, recorded in the summary.
	Version string
	// StateFile locates the cluster started by `ratelab cluster up` (provider "running");
	// default cluster.DefaultStateFile().
	StateFile string
	// Logf receives progress messages; nil is silent.
	Logf func(format string, args ...any)
	// OnInterval is called with every per-second row as it is written.
	OnInterval func(results.Interval)
	// OnProgress, when set, receives a live snapshot about every ProgressEvery while the
	// schedule runs, from the collector's goroutine; it reads counters the driver keeps
	// anyway, so it costs the decisions nothing.
	OnProgress func(results.Progress)
	// OnHistogram, when set, hears each second's latency histogram (its served requests) right
	// after its row, from every driver: live metrics publish the rows and these histograms as
	// they are written, the same figures as the run directory's.
	OnHistogram func(sec int, h *results.Histogram)
	// PasswordFile holds the password of an external cluster (--password-file); without it the
	// password comes from $RATELAB_REDIS_PASSWORD. Passwords never come from argv or the spec.
	PasswordFile string
	// TLS are the CA, certificate and key files of an external cluster (--tls-ca, --tls-cert,
	// --tls-key); setting any of them makes the connections TLS.
	TLS *cluster.TLSFiles
	// RecordTrace, when set, is a file to write the run's schedule to after the run, as a trace
	// (workload/trace): every offered request's intended offset, tenant, endpoint and cost.
	// Replaying it (spec.Trace) with limiter.clock: schedule reproduces the run's decisions.
	RecordTrace string
	// AllowFaults lets a scenario's cluster faults run against an external cluster
	// (--allow-faults); without it such a run is refused before it starts.
	AllowFaults bool
	// Part makes this run one of Count generators of one load (--part i/N): it offers only
	// the requests of the tenants it owns (see workload.Part). Zero: the whole load.
	Part workload.Part
	// Consumers hear every decision's Record, after the driver's own (verdict, per-key tally,
	// per-second stats): a live metric or a custom check is one more consumer. Every driver of
	// a scenario calls them: in process from many workers at once, over HTTP (via: http) from
	// the collector's goroutine once a record is judged.
	Consumers []Consumer
	// Wrap, when set, wraps every gateway's limiter before the run starts (a test's slowed or
	// instrumented limiter); the run measures what the wrapper does too.
	Wrap func(limiter.Limiter) limiter.Limiter
	// StartAt, when set, is the schedule's t=0 (--start-at): the run sets up (cluster client,
	// scripts, gateways), then waits until this instant and starts the pacer there, so parts
	// started with one StartAt share their base time to the hosts' clock sync. A StartAt more
	// than MaxStartLate in the past when the set-up is done is refused (ErrStartPast).
	StartAt time.Time

	// sharedLocal is set by Shared.Run: the run attaches to a local cluster Share started.
	sharedLocal bool
}

// MaxStartLate is how far past Options.StartAt a run may finish its set-up and still start:
// the schedule then begins at StartAt and the dispatcher catches up (counting what is more than
// a second late as dropped, as any lag).
const MaxStartLate = time.Second

// Result is what a run leaves: its directory and its summary.
type Result struct {
	Dir     string
	Summary *results.Summary
}

// Measured is what a driver measured, handed to Session.Finish: the summary's load, outcomes,
// errors, latency, overspend and hot keys (without their nodes), the per-second rows, the run's
// latency histogram and, where the driver keeps them, the per-key counts for keys.csv.
type Measured struct {
	Summary *results.Summary
	Rows    []results.Interval
	Hist    *results.Histogram
	// Keys, when not nil, is written as keys.csv.
	Keys []results.KeyTally
	// Ran is how much of the schedule the run covered (less than the duration if interrupted).
	Ran time.Duration
}

// ProgressEvery is how often Options.OnProgress hears a snapshot while the schedule runs.
const ProgressEvery = 250 * time.Millisecond
