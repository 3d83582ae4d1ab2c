package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// stateSchema names the state file format.
const stateSchema = "ratelab.cluster-state/v1"

// DefaultStateFileName is the state file's name inside $XDG_RUNTIME_DIR or os.TempDir().
const DefaultStateFileName = "ratelab-cluster.json"

// state is what `ratelab cluster up` records for `down` and `status`: enough to find, check and
// stop the nodes from another process.
type state struct {
	Schema       string    `json:"schema"`
	StartedAt    time.Time `json:"started_at"`
	Dir          string    `json:"dir"`
	RedisServer  string    `json:"redis_server"`
	RedisVersion string    `json:"redis_version"`
	Primaries    int       `json:"primaries"`
	Replicas     int       `json:"replicas"`
	NodeTimeout  string    `json:"node_timeout"`
	Nodes        []Node    `json:"nodes"`
	// PasswordFile holds the RequirePass password (mode 0600); the password itself is never
	// recorded here.
	PasswordFile string `json:"password_file,omitempty"`
}

// DefaultStateFile is $XDG_RUNTIME_DIR/ratelab-cluster.json, or the same name in os.TempDir().
func DefaultStateFile() string {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	return filepath.Join(dir, DefaultStateFileName)
}

// SaveState writes the cluster's pids, ports and dirs to path (atomically: temp file + rename)
// so that Attach, Down and ReadStatus can find it from another process. Stop removes the file.
func (l *Local) SaveState(path string) error {
	nodes := l.Nodes()
	st := state{
		Schema: stateSchema, StartedAt: time.Now().UTC(), Dir: l.root, RedisServer: l.bin,
		RedisVersion: l.version, Primaries: l.opts.Primaries, Replicas: l.opts.Replicas,
		NodeTimeout: l.opts.NodeTimeout.String(), Nodes: nodes, PasswordFile: l.PasswordFile(),
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("cluster: encode state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cluster: write state file %s: %w", path, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cluster: write state file %s: %w", path, err)
	}
	l.mu.Lock()
	l.stateFile = path
	l.mu.Unlock()
	return nil
}

// readState loads path into a Local that owns no processes, without checking the nodes.
func readState(path string) (*Local, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cluster: state file %s does not exist: %w; start one with `ratelab cluster up`", path, ErrNoState)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read state file: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("cluster: state file %s: %w; remove it if no cluster runs", path, err)
	}
	if st.Schema != stateSchema || len(st.Nodes) == 0 {
		return nil, fmt.Errorf("cluster: state file %s: schema %q with %d nodes, want %q with nodes; remove it if no cluster runs",
			path, st.Schema, len(st.Nodes), stateSchema)
	}
	nt, _ := time.ParseDuration(st.NodeTimeout)
	l := &Local{
		opts: Options{
			Primaries: st.Primaries, Replicas: st.Replicas, NodeTimeout: nt, RedisServer: st.RedisServer,
			Dir: filepath.Dir(st.Dir), Detached: true,
		}.withDefaults(),
		bin: st.RedisServer, root: st.Dir, version: st.RedisVersion, stateFile: path,
	}
	l.opts.Replicas = st.Replicas // as recorded, whatever withDefaults made of it
	if st.PasswordFile != "" {
		pw, err := readPasswordFile(st.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("cluster: state file %s: %w; remove it if no cluster runs", path, err)
		}
		l.auth.password = pw
		l.opts.RequirePass, l.opts.password = true, pw
	}
	for _, n := range st.Nodes {
		if n.RealAddr == "" { // recorded before Node had RealAddr: no proxy, the same address
			n.RealAddr, n.RealPort = n.Addr, n.Port
		}
		l.members = append(l.members, &member{Node: n, client: l.controlClient(n.RealAddr)})
	}
	return l, nil
}

// Attach reattaches to a detached cluster recorded in stateFile. It checks that every recorded
// pid is alive and is that node's redis-server, and that every node answers PING. Close on the
// result only releases clients; Stop ends the nodes.
func Attach(ctx context.Context, stateFile string) (*Local, error) {
	l, err := readState(stateFile)
	if err != nil {
		return nil, err
	}
	var probs []string
	for _, m := range l.members {
		switch {
		case !processIsNode(m.Pid, m.RealAddr):
			probs = append(probs, fmt.Sprintf("%s: pid %d is not running", m.Addr, m.Pid))
		default:
			if err := m.client.Ping(ctx).Err(); err != nil {
				probs = append(probs, fmt.Sprintf("%s: PING: %v", m.Addr, err))
			}
		}
	}
	if len(probs) > 0 {
		_ = l.Close()
		return nil, fmt.Errorf("cluster: attach %s: %s: %w; `ratelab cluster down --state %s` cleans up", stateFile, strings.Join(probs, "; "), ErrNotRunning, stateFile)
	}
	return l, nil
}

// Stop ends every node of the cluster, whether this process started it or attached to it
// (SIGTERM, then SIGKILL), removes the cluster's dir and its state file, and closes the Local.
// Only pids that still belong to a redis-server are signalled. Idempotent.
func (l *Local) Stop() error {
	l.stopOnce.Do(func() { l.stopErr = l.stop() })
	return l.stopErr
}

func (l *Local) stop() error {
	if l.adopted {
		return errors.Join(fmt.Errorf("cluster: Stop: %w: the nodes run outside this process", ErrUnsupported), l.Close())
	}
	l.mu.Lock()
	members := append([]*member(nil), l.members...)
	stateFile := l.stateFile
	l.mu.Unlock()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		if m != nil {
			wg.Go(func() { errs[i] = l.stopMember(m) })
		}
	}
	wg.Wait()
	err := errors.Join(errs...)
	if l.root != "" && strings.HasPrefix(filepath.Base(l.root), rootPrefix) {
		if rerr := os.RemoveAll(l.root); rerr != nil {
			err = errors.Join(err, fmt.Errorf("cluster: remove %s: %w", l.root, rerr))
		}
	}
	if stateFile != "" {
		if rerr := os.Remove(stateFile); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("cluster: remove state file: %w", rerr))
		}
	}
	return errors.Join(err, l.Close())
}
