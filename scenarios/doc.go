// Package scenarios owns what a run is asked to do: the scenario Spec (YAML, strictly decoded,
// defaulted and validated, every problem reported with its field and fix), the built-in
// scenarios (embedded YAML), the SLO checks a run is judged by, the typed names of limiter
// kinds, cluster providers and fault kinds, and the named values of the spec's other fields.
//
// It never runs anything: the engine (package run/engine) turns a Spec into a run, the
// drivers above it (attack, capacity, simulate, bench) into runs of their own.
package scenarios
