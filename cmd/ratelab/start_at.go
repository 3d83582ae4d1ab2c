package main

import (
	"fmt"
	"strings"
	"time"

	"ratelab/run/engine"
	"ratelab/scenarios"
)

// startAtFlag is --start-at TIME: an RFC 3339 instant, or +DURATION from when the flag is read.
// A time more than engine.MaxStartLate in the past is refused here; the engine checks again
// once the run has set up.
type startAtFlag struct{ at time.Time }

func (f *startAtFlag) String() string {
	if f.at.IsZero() {
		return ""
	}
	return f.at.UTC().Format(time.RFC3339Nano)
}

func (f *startAtFlag) Type() string { return "TIME" }

func (f *startAtFlag) Set(s string) error {
	at, err := parseStartAt(s, time.Now())
	if err != nil {
		return err
	}
	f.at = at
	return nil
}

// parseStartAt reads --start-at at now: "+10s" is now plus the duration, anything else an RFC
// 3339 time (YYYY-MM-DDThh:mm:ssZ, fractions and offsets allowed).
func parseStartAt(s string, now time.Time) (time.Time, error) {
	var at time.Time
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("%q is not +DURATION (e.g. +30s) or an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", s)
		}
		at = now.Add(d)
	} else {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z) or +DURATION (e.g. +30s)", s)
		}
		at = t
	}
	if late := now.Sub(at); late > engine.MaxStartLate {
		return time.Time{}, fmt.Errorf("%s is already %s past (now %s); give a time ahead, or +30s from now, the same for every part",
			s, late.Round(time.Millisecond), now.UTC().Format(time.RFC3339))
	}
	return at, nil
}

// checkStartAt refuses --start-at where it has no single start to mark: repetitions (each
// starts after the last) and runs through the HTTP gateway (package attack paces its own).
func checkStartAt(spec *scenarios.Spec, o runOptions) error {
	if o.startAt.at.IsZero() {
		return nil
	}
	if o.repeat > 1 {
		return fmt.Errorf("--start-at %s with --repeat %d: the repetitions start one after another; drop one of them", o.startAt.String(), o.repeat)
	}
	if spec.Via == scenarios.ViaHTTP {
		return fmt.Errorf("--start-at %s with via: http: a run through the gateway has no start barrier; run in process (--via process) or drop --start-at", o.startAt.String())
	}
	return nil
}
