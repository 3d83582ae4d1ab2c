package main

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"ratelab/report/progress"
	"ratelab/studies/demo"
)

func newDemoCmd() *cobra.Command {
	var (
		out          string
		quick, quiet bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the guided story: short runs that show what each limiter design gets wrong, linked from one HTML page",
		Long: `Run a guided sequence of short scenarios on local Redis Clusters: the fixed window's
boundary burst vs the token bucket, a hot tenant on one shard, a paused primary with fail-open vs
fail-closed, and leases vs central decisions. Each step prints its key numbers; OUT/index.html
links every step's narration, numbers, plots and full report (default OUT: out/demo-<time>).

--quick shortens every run to about 2 s. Ctrl-C stops the current run and writes the index of
the steps that finished.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				out = filepath.Join("out", "demo-"+time.Now().Format("20060102-150405"))
			}
			ctx, stop := interruptContext(cmd.Context())
			defer stop()
			stderr, stdout := cmd.ErrOrStderr(), cmd.OutOrStdout()
			opts := demo.Options{Out: out, Quick: quick, Version: version}
			if !quiet {
				// Messages go through the running step's progress display, so they do not tear its bar.
				var (
					mu   sync.Mutex
					live *liveProgress
				)
				opts.Logf = func(f string, a ...any) {
					mu.Lock()
					defer mu.Unlock()
					if live != nil {
						live.logf(f, a...)
						return
					}
					fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...)
				}
				opts.Live = func(label string, total time.Duration) demo.LiveHooks {
					lp := newLiveProgress(stderr, total, false, progress.WithPrefix(label))
					mu.Lock()
					live = lp
					mu.Unlock()
					return demo.LiveHooks{OnInterval: lp.onInterval, OnProgress: lp.onProgress, Done: func() {
						lp.close()
						mu.Lock()
						live = nil
						mu.Unlock()
					}}
				}
			}
			steps, err := demo.Play(ctx, opts)
			for _, st := range steps {
				fmt.Fprintln(stdout, st.Title)
				for _, f := range st.Facts {
					fmt.Fprintf(stdout, "  %-40s %s\n", f.Label+":", f.Value)
				}
			}
			index := filepath.Join(out, demo.IndexFile)
			if err != nil {
				return fmt.Errorf("%w (finished steps are in %s)", err, index)
			}
			fmt.Fprintf(stdout, "%d of %d steps; open %s\n", len(steps), demo.Steps(), index)
			if ctx.Err() != nil {
				return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted after %d steps; index of what ran: %s", len(steps), index)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "demo `DIR` (default out/demo-<time>)")
	f.BoolVar(&quick, "quick", false, "shorten every run to about 2 s")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress messages and no live progress")
	return cmd
}
