package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ratelab/cluster"
)

// stateFileHelp names cluster.DefaultStateFile in help text as a rule rather than as this
// machine's path, so the help (and docs/cli.md) reads the same everywhere.
const stateFileHelp = "$XDG_RUNTIME_DIR/" + cluster.DefaultStateFileName + ", or in the temp dir without it"

// newClusterCmd is `ratelab cluster up|down|status`: a local Redis Cluster that outlives the
// command, for running scenarios against by hand.
func newClusterCmd() *cobra.Command {
	cmd := newGroupCmd(&cobra.Command{
		Use:   "cluster",
		Short: "Manage a local Redis Cluster (redis-server processes on 127.0.0.1)",
	})
	cmd.AddCommand(newClusterUpCmd(), newClusterDownCmd(), newClusterStatusCmd())
	return cmd
}

func newClusterUpCmd() *cobra.Command {
	var (
		opts      cluster.Options
		replicas  int
		stateFile string
		quiet     bool
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a detached local Redis Cluster and record it in a state file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Replicas = replicas
			if replicas == 0 {
				opts.Replicas = cluster.NoReplicas // on the command line 0 means none
			}
			if !quiet {
				opts.Logf = func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			l, err := cluster.Up(ctx, opts, stateFile)
			if err != nil {
				return err
			}
			defer l.Close() // releases clients; the nodes keep running
			out := cmd.OutOrStdout()
			if err := l.Status(ctx).WriteText(out); err != nil {
				return err
			}
			if stateFile == "" {
				stateFile = cluster.DefaultStateFile()
			}
			fmt.Fprintf(out, "\naddrs: %s\nstate: %s\nstop:  ratelab cluster down --state %s\n", strings.Join(l.Addrs(), ","), stateFile, stateFile)
			if pf := l.PasswordFile(); pf != "" {
				// The password itself is never printed: it would land in terminals and CI logs.
				fmt.Fprintf(out, "password: in %s (mode 0600); export %s=\"$(cat %s)\"\n", pf, cluster.PasswordEnv, pf)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Primaries, "primaries", cluster.DefaultPrimaries, "number of primaries (slot owners)")
	f.IntVar(&replicas, "replicas", cluster.DefaultReplicas, "replicas per primary (0 = none)")
	f.IntVar(&opts.BasePort, "base-port", 0, "first client port (nodes use base-port, base-port+1, ...; bus ports +10000); 0 = free ports")
	f.DurationVar(&opts.NodeTimeout, "node-timeout", cluster.DefaultNodeTimeout, "cluster-node-timeout")
	f.StringVar(&opts.RedisServer, "redis-server", cluster.DefaultRedisServer, "redis-server binary (path or name on PATH)")
	f.StringVar(&opts.Dir, "dir", "", "parent dir of the cluster's temp dir (default: system temp dir)")
	f.StringArrayVar(&opts.ExtraConfig, "config", nil, "extra redis.conf line for every node (repeatable)")
	f.StringVar(&stateFile, "state", "", "state file (default "+stateFileHelp+")")
	f.BoolVar(&opts.RequirePass, "requirepass", false, "protect every node with a generated password (requirepass + masterauth), written to a mode-0600 file in the cluster's dir, never printed")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress messages on stderr")
	return cmd
}

func newClusterDownCmd() *cobra.Command {
	var stateFile string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the detached local Redis Cluster recorded in the state file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := cluster.Down(stateFile)
			if errors.Is(err, cluster.ErrNoState) {
				fmt.Fprintln(cmd.OutOrStdout(), "no cluster recorded:", err)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "cluster stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&stateFile, "state", "", "state file (default "+stateFileHelp+")")
	return cmd
}

func newClusterStatusCmd() *cobra.Command {
	var (
		stateFile string
		output    *outputFlag
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show nodes, roles, slot ranges and cluster_state of the detached local cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			st, err := cluster.ReadStatus(ctx, stateFile)
			if err != nil {
				return err
			}
			if output.value == outputJSON {
				err = printJSON(cmd.OutOrStdout(), st)
			} else {
				err = st.WriteText(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			if !st.Healthy() {
				return errors.New("cluster is not healthy: some node is down or reports cluster_state other than ok")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&stateFile, "state", "", "state file (default "+stateFileHelp+")")
	output = addOutputFlag(cmd, "json is the nodes, roles, slots and cluster_state (the exit code still says whether it is healthy)", outputJSON)
	return cmd
}
