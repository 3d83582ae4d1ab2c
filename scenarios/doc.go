// Package scenarios owns what a run is: the scenario Spec (YAML, strictly decoded and validated),
// the built-in scenarios (embedded YAML), and the Engine — an open-loop driver that fixes each
// request's intended start time from a pacer, bounds in-flight requests (counting drops, never
// skipping silently), times every decision from its intended start (no coordinated omission),
// classifies outcomes and Redis errors, checks overspend, and writes the run record.
//
// It never draws plots (package report) and never parses command lines (cmd/ratelab).
package scenarios
