package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"ratelab/run/attack"
	"ratelab/run/engine"
	"ratelab/scenarios"
	"ratelab/workload/trace"
)

// newTraceCmd is `ratelab trace gen|import|info`: request traces to replay with
// `ratelab run|attack --trace`.
func newTraceCmd() *cobra.Command {
	cmd := newGroupCmd(&cobra.Command{
		Use:   "trace",
		Short: "Generate, import and inspect request traces (replay them with 'ratelab run|attack --trace')",
		Long: `A trace is a compact binary file of timed requests (time offset, tenant, endpoint, cost);
see docs/attack.md for the format. 'ratelab attack --trace FILE --speed 2' replays one over HTTP
with its original timing, keys and each tenant's order; 'ratelab run NAME --trace FILE' replays one
in-process, and 'ratelab run NAME --record-trace FILE' records a run's schedule as a trace.`,
	})
	cmd.AddCommand(newTraceGenCmd(), newTraceImportCmd(), newTraceInfoCmd())
	return cmd
}

type traceGenOptions struct {
	scenario  string
	rate      float64
	duration  time.Duration
	seed      uint64
	tenants   int
	theta     float64
	pacer     string
	endpoints string
	file      string
}

func newTraceGenCmd() *cobra.Command {
	var o traceGenOptions
	cmd := &cobra.Command{
		Use:   "gen --file FILE",
		Short: "Write a synthetic trace: a scenario's requests (or the flags'), same seed, same requests",
		Example: `  ratelab trace gen --scenario hot-tenant --duration 5s --rate 2000 --file hot.trace
  ratelab trace gen --rate 1000 --duration 10s --tenants 500 --zipf 0.99 --file zipf.trace`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := traceSpec(cmd, o)
			if err != nil {
				return err
			}
			t, err := engine.TraceOf(spec)
			if err != nil {
				return err
			}
			return writeTrace(cmd, o.file, t)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "take rate, duration, tenants, endpoints and seed from this scenario (name or YAML file)")
	f.Float64Var(&o.rate, "rate", attack.DefaultRate, "requests/s (overrides the scenario's)")
	f.DurationVar(&o.duration, "duration", attack.DefaultDuration, "length (overrides the scenario's)")
	f.Uint64Var(&o.seed, "seed", attack.DefaultSeed, "seed (overrides the scenario's)")
	f.IntVar(&o.tenants, "tenants", attack.DefaultTenants, "number of tenants (overrides the scenario's)")
	f.Float64Var(&o.theta, "zipf", attack.DefaultTheta, "Zipf skew (overrides the scenario's)")
	f.StringVar(&o.pacer, "pacer", "constant", "constant or poisson (overrides the scenario's)")
	f.StringVar(&o.endpoints, "endpoints", attack.DefaultEndpoint, "endpoint mix name[:weight],... (overrides the scenario's)")
	f.StringVar(&o.file, "file", "", "trace `FILE` to write (required)")
	return cmd
}

// traceSpec is the scenario to generate from: the named one with the flags set over it, or
// one made of the flags alone.
func traceSpec(cmd *cobra.Command, o traceGenOptions) (*scenarios.Spec, error) {
	if o.file == "" {
		return nil, errors.New("--file: required; name the trace file to write, e.g. --file run.trace")
	}
	set := cmd.Flags().Changed
	spec := &scenarios.Spec{Name: "trace"}
	if o.scenario != "" {
		s, err := scenarios.Resolve(o.scenario)
		if err != nil {
			return nil, fmt.Errorf("--scenario: %w", err)
		}
		spec = s
	}
	if o.scenario == "" || set("rate") {
		spec.Load.Rate = o.rate
	}
	if o.scenario == "" || set("duration") {
		spec.Duration = scenarios.Duration(o.duration)
	}
	if o.scenario == "" || set("seed") {
		spec.Seed = o.seed
	}
	if o.scenario == "" || set("tenants") {
		spec.Tenants.Count = o.tenants
	}
	if o.scenario == "" || set("zipf") {
		spec.Tenants.Distribution, spec.Tenants.Theta = "zipf", o.theta
	}
	if o.scenario == "" || set("pacer") {
		spec.Load.Pacer = o.pacer
	}
	if o.scenario == "" || set("endpoints") {
		names, weights, err := attack.ParseEndpoints(o.endpoints)
		if err != nil {
			return nil, fmt.Errorf("--endpoints: %w", err)
		}
		spec.Endpoints = nil
		for i, n := range names {
			spec.Endpoints = append(spec.Endpoints, scenarios.Endpoint{Name: n, Weight: weights[i]})
		}
	}
	return spec, nil
}

func newTraceImportCmd() *cobra.Command {
	var in, out string
	cmd := &cobra.Command{
		Use:   "import --csv FILE --file FILE",
		Short: "Convert a CSV access log (time,tenant,endpoint[,cost]) into a trace",
		Long: `Read a CSV access log with rows time,tenant,endpoint[,cost] — time in RFC 3339 or Unix seconds,
tenant the API key to send on replay — and write it as a trace in time order. A header row is
skipped.`,
		Example: "  ratelab trace import --csv access.csv --file prod.trace",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in == "" || out == "" {
				return errors.New("--csv and --file: both required, e.g. --csv access.csv --file prod.trace")
			}
			f, err := os.Open(in)
			if err != nil {
				return fmt.Errorf("--csv: %w", err)
			}
			defer f.Close()
			t, err := trace.ImportCSV(f)
			if err != nil {
				return fmt.Errorf("--csv %s: %w", in, err)
			}
			return writeTrace(cmd, out, t)
		},
	}
	cmd.Flags().StringVar(&in, "csv", "", "CSV access log to read")
	cmd.Flags().StringVar(&out, "file", "", "trace `FILE` to write (required)")
	return cmd
}

func newTraceInfoCmd() *cobra.Command {
	var output *outputFlag
	cmd := &cobra.Command{
		Use:   "info FILE",
		Short: "Describe a trace: requests, duration, tenants, endpoints; say what is damaged",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			t, rerr := trace.ReadAll(f)
			if t == nil {
				return rerr
			}
			info := describeTrace(args[0], t)
			if output.value == outputJSON {
				err = printJSON(cmd.OutOrStdout(), info)
			} else {
				err = info.writeText(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			if rerr != nil {
				return fmt.Errorf("%s: %w (the %d requests above are readable)", args[0], rerr, len(t.Requests))
			}
			return nil
		},
	}
	output = addOutputFlag(cmd, "json is the description (of the readable records, when the file is damaged)", outputJSON)
	return cmd
}

// traceInfo describes a trace: `ratelab trace info`.
type traceInfo struct {
	Path      string  `json:"path"`
	Requests  int     `json:"requests"`
	DurationS float64 `json:"duration_s"`
	// WindowS is the window the requests fill and RatePerS their mean rate over it
	// (trace.Trace.Window at speed 1); DurationS is the last request's offset.
	WindowS  float64 `json:"window_s"`
	RatePerS float64 `json:"rate_per_s"`
	// Start is the recording's start (RFC 3339), "" when the trace has none.
	Start        string   `json:"start,omitempty"`
	Tenants      int      `json:"tenants"`
	TenantPrefix string   `json:"tenant_prefix,omitempty"`
	Endpoints    []string `json:"endpoints"`
	CostTokens   uint64   `json:"cost_tokens"`
	duration     time.Duration
	window       time.Duration
}

func describeTrace(path string, t *trace.Trace) traceInfo {
	tenants := map[uint32]bool{}
	var cost uint64
	for _, r := range t.Requests {
		tenants[r.Tenant] = true
		cost += uint64(r.Cost)
	}
	info := traceInfo{Path: path, Requests: len(t.Requests), DurationS: t.Duration().Seconds(), Tenants: len(tenants),
		Endpoints: t.Endpoints, CostTokens: cost, duration: t.Duration()}
	window, rate := t.Window(1)
	info.WindowS, info.RatePerS, info.window = window.Seconds(), rate, window
	if !t.Start.IsZero() {
		info.Start = t.Start.Format(time.RFC3339Nano)
	}
	if len(t.Tenants) == 0 {
		info.TenantPrefix = t.TenantPrefix
	}
	return info
}

func (i traceInfo) writeText(w io.Writer) error {
	fmt.Fprintf(w, "%s\n", i.Path)
	fmt.Fprintf(w, "  requests   %d over %v", i.Requests, i.duration)
	if i.Requests > 0 {
		fmt.Fprintf(w, " (window %v, %.0f/s)", i.window, i.RatePerS)
	}
	fmt.Fprintln(w)
	if i.Start != "" {
		fmt.Fprintf(w, "  start      %s\n", i.Start)
	}
	fmt.Fprintf(w, "  tenants    %d seen", i.Tenants)
	if i.TenantPrefix != "" {
		fmt.Fprintf(w, " (keys %s<id>)", i.TenantPrefix)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  endpoints  %v\n", i.Endpoints)
	_, err := fmt.Fprintf(w, "  cost       %d tokens\n", i.CostTokens)
	return err
}

func writeTrace(cmd *cobra.Command, path string, t *trace.Trace) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--file: %w", err)
	}
	if err := trace.Write(f, t); err != nil {
		f.Close()
		return fmt.Errorf("--file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--file %s: %w", path, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %d requests over %v\n", path, len(t.Requests), t.Duration())
	return nil
}
