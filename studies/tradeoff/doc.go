// Package tradeoff drives the runs behind the trade-off pictures of a design review: the
// regions sweep (each multi-region design, the rebalance design at each period T, on one
// trace) and the durability matrix (each fault against each durability setting). Each run is
// one engine.Run of a rewritten built-in; the tables and plots of what they measured are
// package report's (report.WriteRegionsSweep, report.WriteDurability).
//
// It never decides a request and never draws: it rewrites specs (pure functions, tested as
// such) and runs them one after another, keeping a run that failed as a results.StudyRun saying so.
package tradeoff
