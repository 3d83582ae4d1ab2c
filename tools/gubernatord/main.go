// Command gubernatord is gubernator's daemon (github.com/gubernator-io/gubernator/v2, the
// version pinned in go.mod) as ratelab starts it on loopback: the module's own SetupDaemonConfig
// and SpawnDaemon, with a static peer list instead of a discovery service, and a route per peer
// so that ratelab can cut one daemon off its peers.
//
// It lives in a module of its own so that ratelab's binary never links gubernator; `make
// gubernator` builds it into bin/. Configuration is gubernator's GUBER_* environment plus:
//
//	RATELAB_GUBER_PEERS   the cluster's peers, comma-separated: each peer's gRPC address, the
//	                      same list in every daemon (it places the peers on the hash ring);
//	                      this daemon's own is GUBER_ADVERTISE_ADDRESS
//	RATELAB_GUBER_ROUTES  peer=addr pairs, comma-separated: this daemon dials peer at addr (a
//	                      forwarder ratelab can cut) instead of at the peer's own address
//
// A peer's name on the ring and in gubernator's answers stays its own address; only the
// connection goes through its route, through a gRPC resolver registered here.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gubernator-io/gubernator/v2"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/resolver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gubernatord:", err)
		os.Exit(1)
	}
}

func run() error {
	routes, err := parseRoutes(os.Getenv("RATELAB_GUBER_ROUTES"))
	if err != nil {
		return err
	}
	resolver.Register(routeBuilder{routes: routes})
	resolver.SetDefaultScheme(routeScheme)
	conf, err := gubernator.SetupDaemonConfig(logrus.StandardLogger(), nil)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if conf.PeerDiscoveryType != "none" {
		return fmt.Errorf("GUBER_PEER_DISCOVERY_TYPE %q: gubernatord takes its peers from RATELAB_GUBER_PEERS; set none", conf.PeerDiscoveryType)
	}
	var peers []gubernator.PeerInfo
	for _, p := range strings.Split(os.Getenv("RATELAB_GUBER_PEERS"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			peers = append(peers, gubernator.PeerInfo{GRPCAddress: p})
		}
	}
	if len(peers) == 0 {
		return fmt.Errorf("RATELAB_GUBER_PEERS is empty: list every peer's gRPC address, this one's (%s) included", conf.AdvertiseAddress)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d, err := gubernator.SpawnDaemon(ctx, conf)
	if err != nil {
		return fmt.Errorf("spawn: %w", err)
	}
	d.SetPeers(peers)
	fmt.Fprintf(os.Stderr, "gubernatord: ready grpc=%s http=%s peers=%d\n", conf.GRPCListenAddress, conf.HTTPListenAddress, len(peers))
	<-ctx.Done()
	d.Close()
	return nil
}

// parseRoutes reads RATELAB_GUBER_ROUTES.
func parseRoutes(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		peer, addr, ok := strings.Cut(kv, "=")
		if !ok || peer == "" || addr == "" {
			return nil, fmt.Errorf("RATELAB_GUBER_ROUTES entry %q: want peer=addr", kv)
		}
		out[peer] = addr
	}
	return out, nil
}

// routeScheme is the resolver every scheme-less gRPC target of this process goes through.
const routeScheme = "ratelab-route"

// routeBuilder resolves a peer's address to its route, or to itself without one.
type routeBuilder struct{ routes map[string]string }

func (b routeBuilder) Scheme() string { return routeScheme }

func (b routeBuilder) Build(t resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	peer := t.Endpoint()
	addr, ok := b.routes[peer]
	if !ok {
		addr = peer
	}
	if err := cc.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: addr, ServerName: peer}}}); err != nil {
		return nil, err
	}
	return nopResolver{}, nil
}

// nopResolver never re-resolves: a route is fixed for the daemon's life.
type nopResolver struct{}

func (nopResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (nopResolver) Close()                                {}
