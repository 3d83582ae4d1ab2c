// Package limiter holds the rate-limit algorithms ratelab measures: the Limiter interface and
// Decision, Redis-backed algorithms that run one Lua script per decision, and in-memory twins with
// identical arithmetic that serve as reference models and as the overspend envelope.
//
// It never starts Redis, never generates load and never writes run outputs.
package limiter
