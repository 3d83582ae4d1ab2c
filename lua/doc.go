// Package lua owns the Lua scripts that ratelab runs inside Redis, embedded as strings.
//
// Each script states its contract (KEYS, ARGV, stored fields, reply) at its top. A script never
// builds key names and never reads the server clock: keys and time come from the caller.
// The package holds no Go logic and never talks to Redis; package limiter runs the scripts.
package lua
