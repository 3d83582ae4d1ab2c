// Package workload owns the shape of the offered load: which key each request hits (Zipf for any
// theta > 0, uniform, hotspot), which endpoint it calls (a weighted Mix), when it is meant to start
// (open-loop pacers: constant and Poisson, at one rate or along a piecewise-linear Profile of
// load stages) and the seeded, reproducible Stream that combines them and
// splits into independent sub-streams for splitting.
//
// Everything here is pure, deterministic logic: the caller owns every random generator and every
// clock, so the same seed always gives the same traffic. The hot-path methods (Draw, Next) allocate
// nothing. The package never talks to Redis, never sleeps, never reads the wall clock and never
// decides whether a request is allowed — it only says what to send and when.
package workload
