package cluster

import "time"

// Building blocks for providers that run redis-server elsewhere (package cluster/docker): the
// same redis.conf, the same port discipline, the same formation (Adopt with Form).

// NodeConfig renders the redis.conf of a node listening on 127.0.0.1:port with its data in
// dir, exactly as the local provider writes it for opts (defaults applied): cluster mode,
// cluster-node-timeout, cluster-announce-ip 127.0.0.1, no persistence, ExtraConfig. A
// RequirePass password is not included (providers that render configs own their secrets).
func NodeConfig(port int, dir string, opts Options) string {
	o := opts.withDefaults()
	o.password = ""
	return nodeConfig(port, announce{}, dir, o)
}

// ReservePorts picks n free loopback ports whose cluster bus ports (+10000) are free too, and
// reserves them in this process (so parallel clusters never share one) until ReleasePorts.
func ReservePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		p, err := reservePort()
		if err != nil {
			ReleasePorts(ports)
			return nil, err
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// ReleasePorts forgets reservations made by ReservePorts.
func ReleasePorts(ports []int) {
	for _, p := range ports {
		releasePort(p)
	}
}

// Topology returns the number of primaries and replicas per primary opts stands for, defaults
// applied (the zero Options is 3 x 1; NoReplicas is 0).
func (o Options) Topology() (primaries, replicas int) {
	d := o.withDefaults()
	return d.Primaries, d.Replicas
}

// NodeConfigBehindProxy is NodeConfig for a node behind a latency proxy on announcePort: the
// node announces the proxy's port (cluster-announce-port, replica-announce-port), so clients,
// MOVED/ASK and replication connect through the proxy, while the bus keeps port+10000.
func NodeConfigBehindProxy(port, announcePort int, dir string, opts Options) string {
	o := opts.withDefaults()
	o.password = ""
	return nodeConfig(port, announce{port: announcePort}, dir, o)
}

// LatencyProxy is the local provider's latency proxy for a redis-server that runs elsewhere
// on loopback (a container with host networking): it listens on a free 127.0.0.1 port, forwards
// every connection to its target and delays every chunk by SetLatency's delay and jitter, in
// both directions. Safe for concurrent use.
type LatencyProxy struct{ p *proxy }

// NewLatencyProxy listens on a free loopback port; connections accepted before SetTarget are
// refused (closed).
func NewLatencyProxy() (*LatencyProxy, error) {
	p, err := newProxy()
	if err != nil {
		return nil, err
	}
	return &LatencyProxy{p: p}, nil
}

// Addr is the proxy's "127.0.0.1:PORT"; Port its port.
func (l *LatencyProxy) Addr() string { return l.p.addr }
func (l *LatencyProxy) Port() int    { return l.p.port }

// SetTarget names the redis-server new connections go to.
func (l *LatencyProxy) SetTarget(addr string) { l.p.setTarget(addr) }

// SetLatency delays every chunk read from now on by delay ± jitter (0, 0 removes the fault).
func (l *LatencyProxy) SetLatency(delay, jitter time.Duration) { l.p.setLatency(delay, jitter) }

// Close stops accepting, cuts every connection and waits for the proxy's goroutines.
func (l *LatencyProxy) Close() error { return l.p.close() }
