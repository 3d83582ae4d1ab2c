package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"ratelab/report"
	"ratelab/report/progress"
	"ratelab/results"
)

// Values of -o/--output: the printed form of a command's result.
const (
	outputText     = "text"     // for people: today's aligned output
	outputJSON     = "json"     // one JSON document on stdout, nothing else
	outputMD       = "md"       // Markdown, for CI job summaries and pull requests
	outputBenchfmt = "benchfmt" // Go benchmark format, for benchstat (compare only)
)

// outputFlag is -o/--output: one of the forms a command allows.
type outputFlag struct {
	value   string
	allowed []string
}

func (o *outputFlag) String() string { return o.value }
func (o *outputFlag) Type() string   { return "FORMAT" }

func (o *outputFlag) Set(s string) error {
	if !slices.Contains(o.allowed, s) {
		return fmt.Errorf("%q is not an output format of this command; use one of %s", s, strings.Join(o.allowed, ", "))
	}
	o.value = s
	return nil
}

// addOutputFlag defines -o/--output on cmd with the given forms (text, the default, first) and
// their help; it returns the flag, whose value is the chosen form.
func addOutputFlag(cmd *cobra.Command, help string, allowed ...string) *outputFlag {
	o := &outputFlag{value: outputText, allowed: append([]string{outputText}, allowed...)}
	cmd.Flags().VarP(o, "output", "o", "print the result as "+strings.Join(o.allowed, ", ")+": "+help)
	return o
}

// printJSON writes v as indented JSON, the -o json output of the commands that have one.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// runOutputHelp is the help of -o on the commands that write a run directory.
const runOutputHelp = "text is the summary for people; json is the run's summary.json as written " +
	"(only it on stdout: progress and messages go to stderr), md the run's report.md"

// reportRun ends a run's command: it writes the plots, report.html and report.md into dir and
// prints the result to w in the form format (text: the summary of sum; json: summary.json; md:
// report.md), and returns runErr (the run's own error) or else the first error of those two.
// A report that cannot be written loses nothing: the error names the data's directory.
func reportRun(w io.Writer, format, dir string, sum *results.Summary, runErr error) error {
	err := runErr
	reportPath := filepath.Join(dir, report.HTMLFile)
	if rerr := report.Generate(dir); rerr != nil {
		reportPath = ""
		if err == nil {
			err = fmt.Errorf("writing the report: %w (the run's data is in %s)", rerr, dir)
		}
	}
	var werr error
	switch format {
	case outputJSON:
		werr = printFile(w, filepath.Join(dir, results.SummaryFile), sum)
	case outputMD:
		werr = printFile(w, filepath.Join(dir, report.MarkdownFile), nil)
	default:
		werr = report.WriteText(w, sum, reportPath)
	}
	if werr != nil && err == nil {
		err = werr
	}
	return err
}

// printFile copies the file at path to w; when it cannot be read it prints fallback as JSON
// (summary.json's content) or, without one, returns the read error.
func printFile(w io.Writer, path string, fallback any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		if fallback != nil {
			return printJSON(w, fallback)
		}
		return err
	}
	_, err = w.Write(b)
	return err
}

// progressOut is where a command's lines about progress go: stderr when stdout carries a JSON
// document, else stdout.
func progressOut(cmd *cobra.Command, format string) io.Writer {
	if format == outputJSON {
		return cmd.ErrOrStderr()
	}
	return cmd.OutOrStdout()
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
