package cluster

// Internals the external tests use.
var ProcessAlive = processAlive

// FreeBasePort returns a base port such that n consecutive node ports and their bus ports are
// free now and not reserved by this process (it reserves and then releases them).
func FreeBasePort(t interface{ Fatalf(string, ...any) }, n int) int {
	for range 100 {
		p, err := reservePort()
		if err != nil {
			t.Fatalf("%v", err)
		}
		releasePort(p)
		if p+n-1 > freePortHigh {
			continue
		}
		ok := true
		for i := range n {
			if pairFree(p+i) != nil {
				ok = false
			}
		}
		if ok {
			return p
		}
	}
	t.Fatalf("no free base port for %d nodes", n)
	return 0
}

// ProxyLinks returns how many client connections l's proxies hold open.
func ProxyLinks(l *Local) int {
	l.mu.Lock()
	proxies := l.proxies
	l.mu.Unlock()
	n := 0
	for _, p := range proxies {
		p.mu.Lock()
		n += len(p.links)
		p.mu.Unlock()
	}
	return n
}
