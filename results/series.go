package results

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// SeriesWriter writes the files of a run directory that grow a second at a time as the run
// goes: timeseries.csv (TimeseriesWriter) and latency.hlog (LatencyLogWriter). Create it before
// the load, Start it with the load's start (t_s 0), Write each second's row with its latency
// histogram, End with the run's totals and Close. Every kind of run (a scenario, an HTTP attack,
// a merge) writes its seconds through it, so their directories hold the same files. Not safe
// for concurrent use.
type SeriesWriter struct {
	ts, hl *os.File
	tsw    *TimeseriesWriter
	lw     *LatencyLogWriter
	start  time.Time
}

// CreateSeries creates timeseries.csv and latency.hlog in dir and writes timeseries.csv's header.
func CreateSeries(dir string) (*SeriesWriter, error) {
	s := &SeriesWriter{}
	var err error
	if s.ts, err = os.Create(filepath.Join(dir, TimeseriesFile)); err != nil {
		return nil, err
	}
	if s.hl, err = os.Create(filepath.Join(dir, LatencyLogFile)); err != nil {
		s.ts.Close()
		return nil, err
	}
	if s.tsw, err = NewTimeseriesWriter(s.ts); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Start sets the run's start, the wall-clock time of t_s 0, and writes latency.hlog's header.
// Call it once, when the load starts, before the first Write.
func (s *SeriesWriter) Start(start time.Time) error {
	if s.lw != nil {
		return fmt.Errorf("series: started twice: %w", ErrInvalid)
	}
	lw, err := NewLatencyLogWriter(s.hl, start)
	if err != nil {
		return err
	}
	s.lw, s.start = lw, start
	return nil
}

// SecondTime is the wall-clock start of second ts of a run started at start, as the time_utc
// column and latency.hlog state it: in UTC, to the millisecond.
func SecondTime(start time.Time, ts float64) time.Time {
	return start.Add(time.Duration(ts * float64(time.Second))).UTC().Truncate(time.Millisecond)
}

// Write appends second iv.TS's row to timeseries.csv, its Time set from the start when zero,
// and its histogram h (the second's served requests) to latency.hlog, with the row's counts.
// iv.TS must be a whole second.
func (s *SeriesWriter) Write(iv Interval, h *Histogram) error {
	if s.lw == nil {
		return fmt.Errorf("series: row t_s=%g written before Start: %w", iv.TS, ErrInvalid)
	}
	if iv.TS != math.Trunc(iv.TS) || iv.TS < 0 || iv.TS > math.MaxInt32 {
		return fmt.Errorf("series: row t_s=%g: want a whole second >= 0: %w", iv.TS, ErrInvalid)
	}
	if iv.Time.IsZero() {
		iv.Time = SecondTime(s.start, iv.TS)
	}
	c := RequestCounts{Offered: iv.Offered, Served: h.Count(), Dropped: iv.Dropped, Failed: iv.Errors}
	return errors.Join(s.tsw.Write(iv), s.lw.Write(int(iv.TS), h, c))
}

// End appends the run's totals to latency.hlog (see LatencyLogWriter.End).
func (s *SeriesWriter) End(total RequestCounts) error {
	if s.lw == nil {
		return fmt.Errorf("series: ended before Start: %w", ErrInvalid)
	}
	return s.lw.End(total)
}

// Close closes both files.
func (s *SeriesWriter) Close() error {
	return errors.Join(s.ts.Close(), s.hl.Close())
}
