package cluster

// Building blocks for providers that run redis-server elsewhere (package cluster/docker): the
// same redis.conf, the same port discipline, the same formation (Adopt with Form).

// NodeConfig renders the redis.conf of a node listening on 127.0.0.1:port with its data in
// dir, exactly as the local provider writes it for opts (defaults applied): cluster mode,
// cluster-node-timeout, cluster-announce-ip 127.0.0.1, no persistence, ExtraConfig. A
// RequirePass password is not included (providers that render configs own their secrets).
func NodeConfig(port int, dir string, opts Options) string {
	o := opts.withDefaults()
	o.password = ""
	return nodeConfig(port, 0, dir, o)
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
