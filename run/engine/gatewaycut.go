package engine

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"

	"ratelab/scenarios"
)

// cutHook fails every command of a gateway's Redis client while its gateway is cut off Redis
// (a gateway partition): at once, with the error a network whose route is gone gives
// (ENETUNREACH, a connection error), not after the timeout a black hole would cost. Commands
// already on the wire finish.
type cutHook struct{ cut *atomic.Bool }

// errCut is the error of a command sent while cut.
var errCut = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}

func (h cutHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h.cut.Load() {
			return nil, errCut
		}
		return next(ctx, network, addr)
	}
}

func (h cutHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.cut.Load() {
			cmd.SetErr(errCut)
			return errCut
		}
		return next(ctx, cmd)
	}
}

func (h cutHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.cut.Load() {
			for _, c := range cmds {
				c.SetErr(errCut)
			}
			return errCut
		}
		return next(ctx, cmds)
	}
}

// hasGatewayPartition reports whether the spec partitions gateways from Redis.
func hasGatewayPartition(spec *scenarios.Spec) bool {
	for _, f := range spec.Faults {
		if f.Kind == scenarios.FaultPartition && f.OnGateways() {
			return true
		}
	}
	return false
}

// gatewayClients are the Redis clients of the lease gateways: the run's shared client, or with
// a gateway partition one client per gateway, each behind its own cut switch (s.cuts), so a cut
// gateway loses Redis while the others keep it.
func (s *Session) gatewayClients(ctx context.Context, n int) []*redis.ClusterClient {
	out := make([]*redis.ClusterClient, n)
	if !hasGatewayPartition(s.Spec) {
		for i := range out {
			out[i] = s.store.client
		}
		return out
	}
	s.cuts = make([]atomic.Bool, n)
	workers := max(s.Spec.Load.Concurrency/n, 1)
	for i := range out {
		hooks := []redis.Hook{cutHook{cut: &s.cuts[i]}}
		if s.store.prefix != "" {
			hooks = append(hooks, prefixHook{prefix: s.store.prefix})
		}
		out[i] = s.extraClient(ctx, s.store.cl.ClientOptions(), workers, hooks...)
	}
	return out
}
