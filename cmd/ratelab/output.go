package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"ratelab/report"
	"ratelab/report/progress"
	"ratelab/results"
)

// printJSON writes v as indented JSON, the --json output of the commands that have one.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// reportRun ends a run's command: it writes the plots and report.html into dir and the text
// summary of sum to w, and returns runErr (the run's own error) or else the first error of those
// two. A report that cannot be written loses nothing: the error names the data's directory.
func reportRun(w io.Writer, dir string, sum *results.Summary, runErr error) error {
	err := runErr
	reportPath := filepath.Join(dir, report.HTMLFile)
	if rerr := report.Generate(dir); rerr != nil {
		reportPath = ""
		if err == nil {
			err = fmt.Errorf("writing the report: %w (the run's data is in %s)", rerr, dir)
		}
	}
	if werr := report.WriteText(w, sum, reportPath); werr != nil && err == nil {
		err = werr
	}
	return err
}

// liveProgress is the progress display of one run on w (the command's stderr): a bar redrawn a
// few times a second on a terminal, plain lines in a pipe or log, nothing with --quiet (then
// display is nil and its hooks are nil). logf writes "ratelab: ..." messages through the
// display so they do not tear the bar; with --quiet they are still written.
type liveProgress struct {
	display    *progress.Display
	logf       func(string, ...any)
	onInterval func(results.Interval)
	onProgress func(results.Progress)
}

func newLiveProgress(w io.Writer, total time.Duration, quiet bool, opts ...progress.Option) *liveProgress {
	if quiet {
		return &liveProgress{logf: func(f string, a ...any) { fmt.Fprintf(w, "ratelab: "+f+"\n", a...) }}
	}
	d := progress.New(w, total, opts...)
	return &liveProgress{
		display:    d,
		logf:       func(f string, a ...any) { d.Println(fmt.Sprintf("ratelab: "+f, a...)) },
		onInterval: d.Interval,
		onProgress: d.Progress,
	}
}

// close ends the display (its last line stays); safe with --quiet.
func (p *liveProgress) close() {
	if p.display != nil {
		p.display.Close()
	}
}
