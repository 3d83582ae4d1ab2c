package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"ratelab/cluster"
	"ratelab/limiter/gateway"
)

// Values of `ratelab gateway --cluster`.
const (
	gatewayClusterLocal   = "local"   // start redis-server nodes for the command, stop them after
	gatewayClusterRunning = "running" // attach to the cluster of `ratelab cluster up`
)

// gatewayOptions are the flags of `ratelab gateway`: what gateway.Serve takes, and the Redis
// Cluster the command starts or attaches to for it.
type gatewayOptions struct {
	serve gateway.ServeOptions
	// cluster is gatewayClusterLocal or gatewayClusterRunning; stateFile locates the running
	// one ("" is cluster.DefaultStateFile()).
	cluster   string
	stateFile string
}

// validate reports every problem of o at once, before any cluster starts.
func (o gatewayOptions) validate() error {
	err := o.serve.Validate()
	if o.cluster != gatewayClusterLocal && o.cluster != gatewayClusterRunning {
		err = errors.Join(err, fmt.Errorf("gateway: cluster %q: want %q (start nodes) or %q (the one from `ratelab cluster up`)", o.cluster, gatewayClusterLocal, gatewayClusterRunning))
	}
	return err
}

// newGatewayCmd is `ratelab gateway`: an HTTP gateway limiting requests with the Redis token
// bucket, for trying the limiter with curl, wrk or a browser.
func newGatewayCmd() *cobra.Command {
	var (
		o     gatewayOptions
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve an HTTP gateway that rate-limits requests with the Redis token bucket",
		Long: `Serve an HTTP gateway on a loopback address. Every request needs an API key
(X-API-Key: KEY or Authorization: Bearer KEY); the key is the tenant and the first path segment
the endpoint. Allowed requests go to --upstream (default: a built-in echo answering 200);
denied ones get 429 with Retry-After and RateLimit-* headers. /metrics serves Prometheus
metrics, /healthz a health check. SIGINT/SIGTERM shut the server down and stop the local
cluster.

  ratelab gateway --listen 127.0.0.1:8080 --policy rate=50,burst=100
  curl -i -H 'X-API-Key: alice' http://127.0.0.1:8080/search/x`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.serve.Logf = func(string, ...any) {}
			if !quiet {
				stderr := cmd.ErrOrStderr()
				o.serve.Logf = func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) }
			}
			if err := o.validate(); err != nil {
				return err
			}
			o.serve.Version, o.serve.Commit = version, currentVersion().Commit
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serveGateway(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.serve.Listen, "listen", gateway.DefaultListen, "host:port to serve on (loopback only unless --allow-remote)")
	f.BoolVar(&o.serve.AllowRemote, "allow-remote", false, "allow a non-loopback --listen address")
	f.StringVar(&o.serve.Upstream, "upstream", "", "backend URL for allowed requests (default: built-in echo)")
	o.serve.Rate, o.serve.Burst = gateway.DefaultRate, gateway.DefaultBurst
	policy := newPolicyFlag(&o.serve.Rate, func() int64 { return o.serve.Burst }, func(b int64) { o.serve.Burst = b })
	f.Var(policy, "policy", "token bucket per tenant and endpoint: refill rate tokens/s, burst (capacity) tokens")
	f.StringVar(&o.cluster, "cluster", gatewayClusterLocal, "local (start redis-server nodes) or running (the one from 'ratelab cluster up')")
	f.StringVar(&o.stateFile, "state", "", "state file of 'ratelab cluster up' (with --cluster running; default "+stateFileHelp+")")
	f.DurationVar(&o.serve.Timeout, "decision-timeout", gateway.DefaultTimeout, "deadline of one limiter decision by Redis")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress messages on stderr")
	return cmd
}

// serveGateway starts a local Redis Cluster (or attaches to the running one), serves the
// gateway on it until ctx ends, then stops the cluster it started (an attached one keeps
// running).
func serveGateway(ctx context.Context, o gatewayOptions) (err error) {
	logf := o.serve.Logf
	cl, err := openGatewayCluster(ctx, o.cluster, o.stateFile, logf)
	if err != nil {
		return err
	}
	defer func() {
		if o.cluster == gatewayClusterLocal {
			logf("stopping the local Redis Cluster")
		}
		// Close stops a cluster this process started; for an attached one it releases clients.
		err = errors.Join(err, cl.Close())
	}()
	return gateway.Serve(ctx, cl.ClientOptions(), o.serve)
}

func openGatewayCluster(ctx context.Context, mode, stateFile string, logf func(string, ...any)) (*cluster.Local, error) {
	if mode == gatewayClusterRunning {
		if stateFile == "" {
			stateFile = cluster.DefaultStateFile()
		}
		cl, err := cluster.Attach(ctx, stateFile)
		if err != nil {
			return nil, fmt.Errorf("gateway: --cluster running: %w (start one with `ratelab cluster up`)", err)
		}
		return cl, nil
	}
	logf("starting a local Redis Cluster")
	return cluster.StartLocal(ctx, cluster.Options{Logf: logf})
}
