// Package attack drives an HTTP endpoint — ratelab's gateway or any rate-limited API — with
// vegeta's library and records the run the way the scenario engine records in-process runs:
// per-second results.Interval rows in timeseries.csv as the run goes, HDR latency histograms,
// summary.json, and black-box overspend judged from 200 vs 429 per tenant against the declared
// policy with check.Bucket. It also writes vegeta's own results file
// (results.bin), so `vegeta report` and `vegeta plot` work on a ratelab run.
//
// The schedule is materialized before the attack as a trace (workload/trace): generated from
// the same pacers, Zipf key distribution and seed as a scenario, or replayed from a file. That
// is what lets every vegeta Result be tied back to its intended start time (vegeta's Seq is
// the schedule's index) and to its tenant (the targeter's request index travels in a header
// that a RoundTripper maps to the Seq). Latency is measured from the intended start, not from
// the moment a vegeta worker dequeued the hit, so a stall is not hidden (no coordinated
// omission); vegeta's own, dequeue-based latencies stay in results.bin.
//
// Requests can be a real API's: any method, body and extra headers, each tenant's key in a
// format such as "Bearer {key}", https with an added CA. Every answer's rate-limit headers
// (Retry-After, RateLimit, RateLimit-*, X-RateLimit-*) are judged against the answers of the same
// key that follow (honesty.go); secret header values and keys are never printed or written.
//
// It never talks to Redis and never decides a request itself; it refuses non-loopback URLs
// unless told otherwise.
package attack
