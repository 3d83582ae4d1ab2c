package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"ratelab/results"
)

// RedrawEvery is the least time between two redraws of the terminal bar.
const RedrawEvery = 200 * time.Millisecond

// MaxPlainLines is about how many plain lines a run prints at most: a long run prints one every
// few seconds instead of one per second (see PlainEvery).
const MaxPlainLines = 120

// Status is what a progress line shows: the latest snapshot and the rows so far.
type Status struct {
	// Elapsed and Total: schedule time covered and scheduled.
	Elapsed, Total time.Duration
	// Last is the last finished second's row; Rows is how many rows there have been.
	Last results.Interval
	Rows int
	// Totals over the rows so far.
	Dropped, Errors, Overspend, FailedOpen, FailedClosed int64
	// Fault is the active fault's kind, "" when none.
	Fault string
}

// Line is the one-line rendering of s, the same on a terminal and in a log.
func Line(s Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s", clock(s.Elapsed), clock(s.Total))
	if s.Rows == 0 {
		b.WriteString("  starting")
	} else {
		fmt.Fprintf(&b, "  offered %.0f/s achieved %.0f/s  p99 %s", float64(s.Last.Offered), float64(s.Last.Achieved()), ms(s.Last.P99Ms))
		// The second's p99 is over its answered requests: its drops are said beside it.
		if s.Last.Dropped > 0 {
			fmt.Fprintf(&b, " (answered; %.1f%% dropped)", 100*s.Last.DroppedShare())
		}
	}
	fmt.Fprintf(&b, "  errors %d  overspend %d", s.Errors, s.Overspend)
	if s.FailedOpen > 0 {
		fmt.Fprintf(&b, "  failed-open %d", s.FailedOpen)
	}
	if s.FailedClosed > 0 {
		fmt.Fprintf(&b, "  failed-closed %d", s.FailedClosed)
	}
	if s.Dropped > 0 {
		fmt.Fprintf(&b, "  dropped %d", s.Dropped)
	}
	if s.Fault != "" {
		fmt.Fprintf(&b, "  fault %s", s.Fault)
	}
	return b.String()
}

// clock formats d as seconds below a minute, m:ss below an hour, else h:mm:ss.
func clock(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d:%02d", s/60, s%60)
	default:
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
}

// ms formats a latency in milliseconds with three significant figures.
func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}

// PlainEvery is how many seconds apart plain lines are for a run of total: every second up to
// MaxPlainLines seconds, then every 2, 5, 10, 15, 30 or 60 seconds.
func PlainEvery(total time.Duration) int {
	secs := int(total / time.Second)
	for _, n := range []int{1, 2, 5, 10, 15, 30} {
		if secs <= n*MaxPlainLines {
			return n
		}
	}
	return 60
}

// Display renders one run's progress to a writer. Its methods are safe for concurrent use: the
// engine calls Progress and Interval from its collector, an attack from its own goroutine.
type Display struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	bar    *progressbar.ProgressBar // nil: plain lines
	every  int
	st     Status
	// forceTTY, when set, overrides asking whether w is a terminal.
	forceTTY *bool
	closed   bool
}

// Option configures a Display.
type Option func(*Display)

// WithTerminal forces the terminal bar (true) or plain lines (false) instead of asking whether
// the writer is a terminal.
func WithTerminal(tty bool) Option {
	return func(d *Display) { d.forceTTY = &tty }
}

// WithPrefix puts label (e.g. "rep 2/5") before every line.
func WithPrefix(label string) Option {
	return func(d *Display) { d.prefix = label + "  " }
}

// IsTerminal reports whether w is a terminal (an *os.File on a TTY).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New returns a Display of a run scheduled for total, writing to w: a bar when w is a terminal,
// plain lines otherwise.
func New(w io.Writer, total time.Duration, opts ...Option) *Display {
	d := &Display{w: w, every: PlainEvery(total), st: Status{Total: total}}
	for _, o := range opts {
		o(d)
	}
	tty := IsTerminal(w)
	if d.forceTTY != nil {
		tty = *d.forceTTY
	}
	if tty {
		d.bar = progressbar.NewOptions64(max(total.Milliseconds(), 1),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(20),
			progressbar.OptionThrottle(RedrawEvery),
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionSetDescription(d.prefix+Line(d.st)),
		)
	}
	return d
}

// Terminal reports whether d draws a bar (else plain lines).
func (d *Display) Terminal() bool { return d.bar != nil }

// Progress takes a live snapshot and, on a terminal, redraws the bar (at most every RedrawEvery).
// Plain lines ignore it but for the active fault, which they show with the next row.
func (d *Display) Progress(p results.Progress) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.st.Elapsed, d.st.Fault = p.Elapsed, p.Fault
	if p.Total > 0 {
		d.st.Total = p.Total
	}
	d.redraw()
}

// Interval takes a finished second's row. On a terminal it updates the bar; otherwise it prints
// a plain line every PlainEvery seconds and for the last second of the run.
func (d *Display) Interval(iv results.Interval) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.st.Last = iv
	d.st.Rows++
	d.st.Dropped += iv.Dropped
	d.st.Errors += iv.Errors
	d.st.Overspend += iv.Overspend
	d.st.FailedOpen += iv.FailedOpen
	d.st.FailedClosed += iv.FailedClosed
	end := time.Duration(iv.TS+1) * time.Second
	d.st.Elapsed = max(d.st.Elapsed, min(end, d.st.Total))
	if d.bar != nil {
		d.redraw()
		return
	}
	last := end >= d.st.Total
	if int(iv.TS+1)%d.every == 0 || last {
		s := d.st
		s.Elapsed = min(end, d.st.Total)
		fmt.Fprintln(d.w, "  "+d.prefix+Line(s))
	}
}

// redraw puts the status on the bar. Caller holds d.mu.
func (d *Display) redraw() {
	if d.bar == nil {
		return
	}
	if ms := max(d.st.Total.Milliseconds(), 1); ms != d.bar.GetMax64() {
		d.bar.ChangeMax64(ms) // a trace replay learns its length from the first snapshot
	}
	d.bar.Describe(d.prefix + Line(d.st))
	// The bar's unit is milliseconds of schedule; it finishes (and stops redrawing) at Close.
	_ = d.bar.Set64(min(d.st.Elapsed.Milliseconds(), d.bar.GetMax64()-1))
}

// Println writes a message line (a log line of the run) without tearing the bar: on a terminal
// the bar is cleared, the line written and the bar drawn again below it.
func (d *Display) Println(line string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bar == nil || d.closed {
		fmt.Fprintln(d.w, line)
		return
	}
	_ = d.bar.Clear()
	fmt.Fprintln(d.w, line)
	// The bar comes back with the next snapshot (a few times a second).
}

// Close ends the display: on a terminal the bar gives way to the final status as a plain line
// (an interrupted run's bar is not shown full). Rows or snapshots after Close are ignored.
func (d *Display) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	if d.bar == nil {
		return
	}
	_ = d.bar.Clear()
	_ = d.bar.Exit()
	fmt.Fprintln(d.w, "  "+d.prefix+Line(d.st))
}
