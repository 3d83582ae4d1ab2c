package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// Run executes one scenario in process: Open, Drive, Finish. It writes timeseries.csv and
// latency.hlog as the run goes and at the end summary.json, the whole-run latency histogram
// (latency.hdr.json, latency.hgrm), keys.csv and scenario.yaml.
// Cancelling ctx stops the schedule early: the decisions already sent finish, and everything
// measured is written with interrupted: true. Local Redis nodes are stopped before Run returns.
// A via: http scenario runs through package attack instead.
func Run(ctx context.Context, spec *scenarios.Spec, opts Options) (res *Result, err error) {
	s, err := Open(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("stopping the cluster: %w", cerr)
		}
	}()
	m, driveErr := s.Drive(ctx)
	res, err = s.Finish(ctx, m)
	return res, errors.Join(driveErr, err)
}

// Drive follows the open-loop schedule with the session's gateways, in this process, and
// returns what it measured. timeseries.csv and latency.hlog (the per-second histograms) are
// written as the run goes; a write error is returned with the measurement, which is complete
// either way.
func (s *Session) Drive(ctx context.Context) (*Measured, error) {
	pacer, keys, err := newSchedule(s.Spec, s.replay)
	if err != nil {
		return nil, err
	}
	w, err := newRowWriter(s.Dir)
	if err != nil {
		return nil, err
	}
	defer w.close()
	d := newDriver(s)
	d.onProgress = s.opts.OnProgress
	sum := results.NewSummary(s.Spec.Name, int64(s.Spec.Seed), s.started)
	plan := newFootprintPlan(s.Spec, s.secs)
	total := &Account{hist: results.NewHistogram()}
	m := &Measured{Summary: sum, Hist: total.hist}
	var c counts
	firsts := newFirstFailures(s.Spec)
	emit := func(sec int, st *Account) {
		plan.sample(sec, &sum.Process)
		iv := d.row(sec, st)
		iv.Time = results.SecondTime(d.base, iv.TS)
		c.offered, c.sent, c.dropped = c.offered+iv.Offered, c.sent+iv.Sent, c.dropped+iv.Dropped
		c.behind += d.behind[sec].Load()
		total.Add(st)
		m.Rows = append(m.Rows, iv)
		if firsts != nil {
			firsts.Add(scenarios.NewSecond(&iv, st.hist))
		}
		w.write(d.base, iv, st.hist)
		if s.opts.OnInterval != nil {
			s.opts.OnInterval(iv)
		}
		if s.opts.OnHistogram != nil {
			s.opts.OnHistogram(sec, st.hist)
		}
	}
	spec := s.Spec
	s.logf("running %s: %s (%s limiter, %d workers, max in flight %d)",
		spec.Name, loadLine(spec), spec.Limiter.Kind, spec.Load.Concurrency, spec.Load.MaxInflight)
	cpuFrom := s.readCPU(ctx)
	waitFrom := time.Now()
	base, err := waitStart(ctx, s.opts.StartAt, s.logf)
	if err != nil {
		return nil, err
	}
	d.run(ctx, base, pacer, keys, emit)
	sum.CPU = cpuBetween(cpuFrom, s.readCPU(ctx), base)
	s.faults.Stop()
	plan.end(&sum.Process)
	m.Ran = time.Duration(d.elapsed.Load())
	total.Add(d.rec.late())
	for i := range d.late {
		c.late += d.late[i].Load()
		c.lateAnswers += d.lateAnswers[i].Load()
	}
	d.summarize(sum, total, m.Ran, c)
	sum.SetCPUPerDecision()
	if !s.opts.StartAt.IsZero() {
		// Every part of one barrier then has the same started_at, to the nanosecond.
		sum.StartedAt = base
		sum.Load.AddNote(results.NoteStart, startNote(base, base.Sub(waitFrom)))
	}
	if firsts != nil {
		sum.Stages = firsts.Result()
		sum.Load.AddNote(results.NoteStages, stagesNote(spec))
	}
	w.end(d.base, results.RunCounts(sum, total.hist))
	m.Keys = s.tally.lines()
	if s.opts.RecordTrace != "" {
		n, rerr := recordSchedule(s.opts.RecordTrace, spec, s.replay, d.clockBase, m.Ran, d.seconds)
		sum.Load.AddNote(results.NoteTrace, fmt.Sprintf("schedule recorded to %s (%d requests, sent or dropped)", s.opts.RecordTrace, n))
		return m, errors.Join(w.err, rerr)
	}
	return m, w.err
}

// rowWriter writes the run's files that grow second by second (results.SeriesWriter):
// timeseries.csv and, beside each row, the second's latency histogram in latency.hlog, what a
// merge of parts needs for its percentiles. It keeps the first error and goes on.
type rowWriter struct {
	sw      *results.SeriesWriter
	started bool
	err     error
}

func newRowWriter(dir string) (*rowWriter, error) {
	sw, err := results.CreateSeries(dir)
	if err != nil {
		return nil, err
	}
	return &rowWriter{sw: sw}, nil
}

// start gives the series the load's start (t_s 0) the first time it is called.
func (w *rowWriter) start(base time.Time) {
	if !w.started {
		w.started = true
		w.keep(w.sw.Start(base))
	}
}

func (w *rowWriter) write(base time.Time, iv results.Interval, h *results.Histogram) {
	w.start(base)
	w.keep(w.sw.Write(iv, h))
}

// end appends the run's totals to latency.hlog.
func (w *rowWriter) end(base time.Time, total results.RequestCounts) {
	w.start(base)
	w.keep(w.sw.End(total))
}

func (w *rowWriter) keep(err error) {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("writing the run's series: %w", err)
	}
}

func (w *rowWriter) close() { w.keep(w.sw.Close()) }
