// Package progress shows a run's live progress while it goes: on a terminal, one bar redrawn a
// few times a second (github.com/schollz/progressbar) with elapsed/total, offered vs achieved
// requests/s, the p99 of the last finished second's answered requests (with its dropped share
// when it dropped any), errors, overspend and the active fault;
// anywhere else (a pipe, a CI log), plain lines, one per second or every few seconds on long runs.
//
// It only renders what it is given: per-second rows (results.Interval) and live snapshots
// (results.Progress). It never measures, never writes run files and never decides what a run
// passes.
package progress
