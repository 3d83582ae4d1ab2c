package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	livemetrics "ratelab/report/live"
	"ratelab/results"
	"ratelab/run/engine"
)

// addMetricsFlags defines the live-metrics flags of `run` and `attack` into cfg.
func addMetricsFlags(cmd *cobra.Command, cfg *livemetrics.Config) {
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "metrics-listen", "", "serve the run's live Prometheus metrics at http://`ADDR`/metrics while it goes (loopback, e.g. 127.0.0.1:9464; docs/metrics.md lists them)")
	f.StringVar(&cfg.Push, "metrics-push", "", "push the live metrics by Prometheus remote write to `URL` every 5 s and at the end (for runs shorter than a scrape interval)")
	f.DurationVar(&cfg.Grace, "metrics-grace", livemetrics.DefaultGrace, "after the run, keep serving its final totals this long so a last scrape sees them")
}

// metricsDir is the run directory a run with live metrics writes: its name is the metrics'
// run_id, so it is fixed before the run starts (out/<scenario>-<time> unless --out).
func metricsDir(cfg livemetrics.Config, out, name string) string {
	if out != "" || !cfg.Enabled() {
		return out
	}
	return engine.DefaultDir(name, time.Now())
}

// startMetrics starts the live metrics of one run (nil when no metrics flag is set: a nil run
// passes hooks through and finishes as a no-op).
func startMetrics(cfg livemetrics.Config, name, dir string, logf func(string, ...any)) (*livemetrics.Run, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg.Start(name, livemetrics.RunID(name, dir), livemetrics.WithLogf(logf),
		livemetrics.WithInfo(map[string]string{"version": version}))
}

// finishMetrics sets the live counters to the summary's totals and serves them for the grace
// period; ctx should outlive an interrupt, so that a last scrape still sees the totals. A push
// that fails is a warning: the run's results are written already. A nil lm (no metrics flag)
// is a no-op: Run's Finish and Close take a nil *Run.
func finishMetrics(ctx context.Context, lm *livemetrics.Run, sum *results.Summary, logf func(string, ...any)) {
	if sum == nil {
		_ = lm.Close()
		return
	}
	if err := lm.Finish(ctx, sum); err != nil {
		logf("live metrics: %v", err)
	}
}

// errMetricsRepeat refuses live metrics with --repeat: each repetition is a run of its own.
var errMetricsRepeat = fmt.Errorf("--metrics-listen/--metrics-push with --repeat: each repetition is a run of its own with its own run_id; run them one at a time to watch them live")
