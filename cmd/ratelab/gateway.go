package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"ratelab/limiter/gateway"
)

// newGatewayCmd is `ratelab gateway`: an HTTP gateway limiting requests with the Redis token
// bucket, for trying the limiter with curl, wrk or a browser.
func newGatewayCmd() *cobra.Command {
	var (
		o     gateway.RunOptions
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

  ratelab gateway --listen 127.0.0.1:8080
  curl -i -H 'X-API-Key: alice' http://127.0.0.1:8080/search/x`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				stderr := cmd.ErrOrStderr()
				o.Logf = func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) }
			}
			if err := o.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return gateway.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", gateway.DefaultListen, "host:port to serve on (loopback only unless --allow-remote)")
	f.BoolVar(&o.AllowRemote, "allow-remote", false, "allow a non-loopback --listen address")
	f.StringVar(&o.Upstream, "upstream", "", "backend URL for allowed requests (default: built-in echo)")
	f.Float64Var(&o.Rate, "rate", gateway.DefaultRate, "refill rate per tenant and endpoint, tokens/s")
	f.Int64Var(&o.Burst, "burst", gateway.DefaultBurst, "bucket capacity per tenant and endpoint, tokens")
	f.StringVar(&o.Cluster, "cluster", gateway.ClusterLocal, "local (start redis-server nodes) or running (the one from `ratelab cluster up`)")
	f.StringVar(&o.StateFile, "state", "", "state file of `ratelab cluster up` (with --cluster running)")
	f.DurationVar(&o.Timeout, "timeout", gateway.DefaultTimeout, "deadline of one decision by Redis")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress messages on stderr")
	return cmd
}
