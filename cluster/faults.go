package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Fault primitives on single nodes. They act on processes only; what a fault means for the
// limiter (detection, recovery, overspend) is measured by the scenario engine.

// member returns the node whose announced (proxy) or real address is addr.
func (l *Local) member(addr string) (*member, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("cluster: node %s: the cluster is closed", addr)
	}
	for _, m := range l.members {
		if m != nil && m.has(addr) {
			return m, nil
		}
	}
	return nil, fmt.Errorf("cluster: node %q: %w; want one of %v", addr, ErrUnknownNode, l.addrsLocked())
}

func (l *Local) addrsLocked() []string {
	out := make([]string, 0, len(l.members))
	for _, m := range l.members {
		if m != nil {
			out = append(out, m.Addr)
		}
	}
	return out
}

// Signal sends sig to the node listening on addr (e.g. syscall.SIGSTOP to pause it,
// syscall.SIGCONT to resume, syscall.SIGKILL to crash it). An exited process is reaped by this
// package; signalling it again is an error.
func (l *Local) Signal(addr string, sig os.Signal) error {
	if l.adopted {
		return fmt.Errorf("cluster: signal %v to node %s: %w: the node runs outside this process (use its provider)", sig, addr, ErrUnsupported)
	}
	m, err := l.member(addr)
	if err != nil {
		return err
	}
	l.mu.Lock()
	p, pid := m.proc, m.Pid
	l.mu.Unlock()
	if p != nil {
		if p.exited() {
			return fmt.Errorf("cluster: signal %v to node %s: pid %d already exited (%v); Restart it first", sig, addr, p.pid, p.waitErr)
		}
		if err := p.cmd.Process.Signal(sig); err != nil {
			return fmt.Errorf("cluster: signal %v to node %s (pid %d): %w", sig, addr, p.pid, err)
		}
		return nil
	}
	if !processIsNode(pid, m.RealAddr) {
		return fmt.Errorf("cluster: signal %v to node %s: pid %d is not running", sig, addr, pid)
	}
	proc, err := os.FindProcess(pid)
	if err == nil {
		err = proc.Signal(sig)
	}
	if err != nil {
		return fmt.Errorf("cluster: signal %v to node %s (pid %d): %w", sig, addr, pid, err)
	}
	return nil
}

// Kill SIGKILLs the node on addr (a crash: no shutdown, no final save) and returns once the
// process is gone, within DefaultStopTimeout.
func (l *Local) Kill(addr string) error {
	if err := l.Signal(addr, syscall.SIGKILL); err != nil {
		return err
	}
	m, _ := l.member(addr)
	if m == nil {
		return nil
	}
	return l.waitGone(m, DefaultStopTimeout)
}

// Pause stops the node on addr with SIGSTOP: its sockets stay open but it answers nothing, which
// peers and clients see as a timeout. Resume undoes it.
func (l *Local) Pause(addr string) error { return l.Signal(addr, sigPause) }

// Resume continues a paused node with SIGCONT.
func (l *Local) Resume(addr string) error { return l.Signal(addr, sigResume) }

// Restart stops the node on addr if it still runs (SIGTERM, then SIGKILL), starts redis-server
// again with the same port, config and dir (so nodes.conf brings back the same node ID) and
// returns once it answers PING. It does not wait for the cluster to converge: use WaitHealthy.
// Do not Restart the same node from two goroutines at once.
func (l *Local) Restart(ctx context.Context, addr string) error {
	if l.adopted {
		return fmt.Errorf("cluster: restart node %s: %w: the node runs outside this process (use its provider)", addr, ErrUnsupported)
	}
	m, err := l.member(addr)
	if err != nil {
		return err
	}
	if err := l.stopMember(m); err != nil {
		return err
	}
	p, err := startProc(l.bin, m.Dir, m.RealPort, m.announceOf(), l.opts)
	if err != nil {
		return err
	}
	l.mu.Lock()
	closed := l.closed
	if !closed {
		m.proc, m.Pid = p, p.pid
	}
	l.mu.Unlock()
	if closed {
		_ = stopProc(p, DefaultStopTimeout)
		return fmt.Errorf("cluster: restart node %s: the cluster was closed meanwhile", addr)
	}
	if err := waitServing(ctx, p, m.RealAddr, m.Dir, l.auth); err != nil {
		return err
	}
	if err := l.setMinReplicas(ctx, m); err != nil {
		return err
	}
	l.opts.Logf("cluster: node %s restarted (pid %d)", addr, p.pid)
	l.mu.Lock()
	stateFile := l.stateFile
	l.mu.Unlock()
	if stateFile != "" {
		return l.SaveState(stateFile) // record the new pid for `ratelab cluster down`
	}
	return nil
}

// stopMember ends one node's process, ours (reaped) or recorded (attached; polled until gone).
func (l *Local) stopMember(m *member) error {
	l.mu.Lock()
	p, pid := m.proc, m.Pid
	l.mu.Unlock()
	if p != nil {
		return stopProc(p, DefaultStopTimeout)
	}
	if !processIsNode(pid, m.RealAddr) {
		return nil
	}
	if proc, err := os.FindProcess(pid); err == nil {
		_ = proc.Signal(syscall.SIGTERM)
		_ = proc.Signal(sigResume) // a paused node handles the SIGTERM only once continued
	}
	if l.waitGone(m, DefaultStopTimeout) == nil {
		return nil
	}
	if proc, err := os.FindProcess(pid); err == nil {
		_ = proc.Signal(syscall.SIGKILL)
	}
	return l.waitGone(m, DefaultStopTimeout)
}

// waitGone polls until m's process has exited, up to bound.
func (l *Local) waitGone(m *member, bound time.Duration) error {
	l.mu.Lock()
	p, pid := m.proc, m.Pid
	l.mu.Unlock()
	t := time.NewTimer(bound)
	defer t.Stop()
	if p != nil {
		select {
		case <-p.done:
			return nil
		case <-t.C:
			return fmt.Errorf("cluster: node %s (pid %d) still running after %v", m.Addr, pid, bound)
		}
	}
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for processAlive(pid) {
		select {
		case <-t.C:
			return fmt.Errorf("cluster: node %s (pid %d) still running after %v", m.Addr, pid, bound)
		case <-tick.C:
		}
	}
	return nil
}

// WaitHealthy polls until every running node answers and reports cluster_state:ok, all of them
// share one view of roles and slots, and all 16384 slots are served by primaries that run and are
// not flagged as failing (so a just-killed primary counts as unhealthy until its replica took
// over) and no running node is flagged as failing (so a restarted node has rejoined), or ctx ends.
func (l *Local) WaitHealthy(ctx context.Context) error {
	return l.waitFor(ctx, "a healthy cluster", l.checkHealthy)
}

func (l *Local) checkHealthy(ctx context.Context) error {
	l.mu.Lock()
	members := append([]*member(nil), l.members...)
	running := map[string]bool{}
	for _, m := range members {
		if m != nil && l.alive(m) {
			running[m.Addr] = true
		}
	}
	l.mu.Unlock()
	var probs []string
	views := map[string][]nodeLine{}
	for _, m := range members {
		if m == nil || !running[m.Addr] {
			continue
		}
		s, err := m.client.ClusterInfo(ctx).Result()
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: CLUSTER INFO: %v", m.Addr, err))
			continue
		}
		if st := parseInfo(s)["cluster_state"]; st != "ok" {
			probs = append(probs, fmt.Sprintf("%s: cluster_state:%s", m.Addr, st))
		}
		view, err := l.view(ctx, m)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		for _, v := range view {
			if running[v.Addr] && (v.has("fail") || v.has("fail?")) {
				probs = append(probs, fmt.Sprintf("%s still flags running node %s as %s", m.Addr, v.Addr, strings.Join(v.Flags, ",")))
			}
		}
		views[topologyKey(view)] = view
	}
	switch {
	case len(views) > 1:
		probs = append(probs, fmt.Sprintf("running nodes hold %d different views of roles and slots", len(views)))
	case len(views) == 1:
		for _, view := range views {
			served := 0
			for _, v := range view {
				if v.role() == RolePrimary && running[v.Addr] && !v.has("fail") && !v.has("fail?") {
					for _, r := range v.Slots {
						served += r.Len()
					}
				}
			}
			if served != TotalSlots {
				probs = append(probs, fmt.Sprintf("running primaries serve %d of %d slots", served, TotalSlots))
			}
		}
	case len(probs) == 0:
		probs = append(probs, "no node is running")
	}
	return joinProbs(probs)
}

// SetLatency delays, from now on, every chunk of bytes the proxy of the node on addr (announced
// or real address) forwards in either direction by delay ± a uniform jitter (never below 0), so
// one request/reply round trip gains about 2 x delay. Bytes keep their order per direction: a
// chunk never overtakes an earlier one, even when its own delay is shorter. Chunks already in
// flight keep the delay they were given; SetLatency(addr, 0, 0) restores pass-through for what
// is read next. Client connections, MIGRATE transfers and replication are delayed; the cluster
// bus is not (nodes do not flag each other as failing), nor are this package's own control
// connections (WaitHealthy, Status, ReplOffsets answer at once).
// It wraps ErrNoProxy unless the cluster was started with Options.Proxy.
func (l *Local) SetLatency(addr string, delay, jitter time.Duration) error {
	if delay < 0 || jitter < 0 {
		return fmt.Errorf("cluster: SetLatency(%s): delay = %v, jitter = %v: want both >= 0 (0, 0 = no fault)", addr, delay, jitter)
	}
	m, err := l.member(addr)
	if err != nil {
		return err
	}
	if m.proxy == nil {
		return fmt.Errorf("cluster: SetLatency(%s): %w: start the cluster with Options.Proxy = true", addr, ErrNoProxy)
	}
	m.proxy.setLatency(delay, jitter)
	return nil
}
