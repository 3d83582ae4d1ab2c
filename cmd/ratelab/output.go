package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"ratelab/report"
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
