// Package lua owns the Lua scripts that ratelab runs inside Redis, embedded as strings.
//
// Each script states its contract (KEYS, ARGV, stored fields, reply) at its top. A script never
// builds key names: keys come from the caller. Time comes from the caller too, except in
// token_bucket.lua when the caller asks for the server clock (its optional ARGV[6] "redis").
// The package holds no Go logic and never talks to Redis; package limiter runs the scripts.
package lua
