package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Up starts a Detached cluster (its nodes outlive this process) and records it in stateFile
// (DefaultStateFile() when ""). It refuses when stateFile records a cluster with a node still
// running; a state file whose nodes are all gone is stale and is replaced. It is the library
// entry point of `ratelab cluster up`.
func Up(ctx context.Context, opts Options, stateFile string) (*Local, error) {
	if stateFile == "" {
		stateFile = DefaultStateFile()
	}
	logf := opts.withDefaults().Logf
	old, err := readState(stateFile)
	switch {
	case err == nil:
		alive := old.runningAddrs()
		_ = old.Close()
		if len(alive) > 0 {
			return nil, fmt.Errorf("cluster: state file %s records a cluster that is running (%s): %w; stop it with `ratelab cluster down --state %s` or pass another --state",
				stateFile, strings.Join(alive, " "), ErrAlreadyRunning, stateFile)
		}
		logf("cluster: removing stale state file %s (no recorded node runs)", stateFile)
		if strings.HasPrefix(filepath.Base(old.root), rootPrefix) {
			_ = os.RemoveAll(old.root)
		}
		_ = os.Remove(stateFile)
	case !errors.Is(err, ErrNoState):
		return nil, err
	}
	opts.Detached = true
	l, err := StartLocal(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := l.SaveState(stateFile); err != nil {
		return nil, errors.Join(err, l.Stop())
	}
	return l, nil
}

// Down stops the detached cluster recorded in stateFile (DefaultStateFile() when ""): every
// recorded node that still runs, its dir and the state file. It wraps ErrNoState when there is no
// state file. It is the library entry point of `ratelab cluster down`.
func Down(stateFile string) error {
	if stateFile == "" {
		stateFile = DefaultStateFile()
	}
	l, err := readState(stateFile)
	if err != nil {
		return err
	}
	return l.Stop()
}

// runningAddrs lists nodes whose process (recorded pid, still a redis-server) runs.
func (l *Local) runningAddrs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.members {
		if m != nil && l.alive(m) {
			out = append(out, m.Addr)
		}
	}
	return out
}

// alive reports whether m runs: as the provider that adopted it says, or by its process. The
// caller holds l.mu or reads only immutable fields.
func (l *Local) alive(m *member) bool {
	if l.live != nil {
		return l.live(m.Node)
	}
	return m.running()
}

// running reports whether m's process runs: ours and not exited, or recorded and still the node.
func (m *member) running() bool {
	if m.proc != nil {
		return !m.proc.exited()
	}
	return processIsNode(m.Pid, m.RealAddr)
}
