package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrStartPast: Options.StartAt was more than MaxStartLate in the past once the run had set up,
// so its schedule could not start at that instant.
var ErrStartPast = errors.New("start time already past")

// waitStart is the start barrier: it returns the load's base time, at itself when at is set
// (after sleeping until it), time.Now() otherwise. Every part given one at thus shares its
// base exactly, and its rows' time_utc line up second by second. It returns ErrStartPast if
// at was more than MaxStartLate ago, and ctx's error if ctx ends first. at is taken to the
// millisecond, the precision of time_utc, so that started_at and second 0's time_utc are equal.
// logf hears that the run is waiting.
func waitStart(ctx context.Context, at time.Time, logf func(string, ...any)) (time.Time, error) {
	if at.IsZero() {
		return time.Now(), nil
	}
	at = at.Truncate(time.Millisecond)
	wait := time.Until(at)
	if wait < -MaxStartLate {
		return time.Time{}, fmt.Errorf("--start-at %s was already %s past when the run was set up; pass a later time (e.g. +30s, leaving time to set up): %w",
			at.UTC().Format(time.RFC3339Nano), (-wait).Round(time.Millisecond), ErrStartPast)
	}
	if wait > 0 {
		logf("set up; waiting %s for --start-at %s", wait.Round(time.Millisecond), at.UTC().Format(time.RFC3339Nano))
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("interrupted while waiting for --start-at %s: %w", at.UTC().Format(time.RFC3339Nano), ctx.Err())
		}
	}
	return at, nil
}

// startNote is the summary note's part about the barrier of a run given a start time: that the
// run waited, and how long.
func startNote(at time.Time, waited time.Duration) string {
	return fmt.Sprintf("started at --start-at %s (waited %s after set-up)", at.UTC().Format(time.RFC3339Nano), waited.Round(time.Millisecond))
}
