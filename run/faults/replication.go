package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/results"
	"ratelab/scenarios"
)

// probeTimeout bounds one INFO read of the replication gap right before a fault, and the PING
// that opens a probe's connection.
const probeTimeout = time.Second

// openProbes opens a connection to every node of the cluster when a fault of specs reads a
// replication gap, so that the read right before the fault goes over a connection already
// open (a dial and handshake at that moment would let the replica catch up meanwhile). A node
// that does not answer now is dialled again at the fault. It reports whether it opened them.
func (r *Runner) openProbes(specs []scenarios.FaultSpec) bool {
	need := false
	for _, f := range specs {
		need = need || readsGap(f.Kind)
	}
	if !need || r.cl == nil {
		return false
	}
	r.probes = map[string]*redis.Client{}
	for _, n := range r.cl.Nodes() {
		c := r.nodeClient(realAddr(n))
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		if err := c.Ping(ctx).Err(); err != nil {
			r.cfg.Logf("replication probe of %s: %v (dialled again at the fault)", n.Addr, err)
		}
		cancel()
		r.probes[n.Addr] = c
	}
	return true
}

// tenurePeriod is how often the probes read every primary's replication offset and script
// calls, so that a gap read at a fault is converted at the bytes per call of the primary's
// current tenure.
const tenurePeriod = 500 * time.Millisecond

// tenure is a primary's replication offset and script calls when it was first seen primary
// under its current replication ID (a promotion starts a new one).
type tenure struct {
	replid     string
	off, calls int64
}

// sampleTenures reads every node on its probe until ctx ends, every tenurePeriod, and keeps for
// each primary the first sample of its tenure.
func (r *Runner) sampleTenures(ctx context.Context) {
	t := time.NewTicker(tenurePeriod)
	defer t.Stop()
	for {
		for _, n := range r.cl.Nodes() {
			sctx, cancel := context.WithTimeout(ctx, probeTimeout)
			info, err := r.info(sctx, n, "replication", "commandstats")
			cancel()
			if err != nil || info["role"] != "master" {
				continue
			}
			off, err := infoInt(info, "master_repl_offset")
			if err != nil {
				continue
			}
			r.mu.Lock()
			if r.tenures[n.Addr].replid != info["master_replid"] {
				r.tenures[n.Addr] = tenure{replid: info["master_replid"], off: off, calls: scriptCalls(info)}
			}
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// readsGap reports whether a fault of kind takes a primary away and so reads its replication
// gap right before it.
func readsGap(kind scenarios.FaultKind) bool {
	return kind == scenarios.FaultKillPrimary || kind == scenarios.FaultFailover || kind == scenarios.FaultPartition
}

// closeProbes closes the probes' connections.
func (r *Runner) closeProbes() {
	for _, c := range r.probes {
		c.Close()
	}
	r.probes = nil
}

// probe is the open client of node n (a new one, to close, when n was not there when the
// probes opened).
func (r *Runner) probe(n cluster.Node) (c *redis.Client, done func()) {
	if c := r.probes[n.Addr]; c != nil {
		return c, func() {}
	}
	c = r.nodeClient(realAddr(n))
	return c, func() { c.Close() }
}

// nodeAt is the cluster's node announced as addr.
func (r *Runner) nodeAt(addr string) cluster.Node {
	for _, n := range r.cl.Nodes() {
		if n.Addr == addr {
			return n
		}
	}
	return cluster.Node{Addr: addr}
}

// realAddr is where a node listens itself, past its latency proxy.
func realAddr(n cluster.Node) string {
	if n.RealAddr != "" {
		return n.RealAddr
	}
	return n.Addr
}

// replicationGap reads, right before a fault takes the primary on addr away, the tokens its
// replicas have not applied yet: the bytes between the primary's replication offset and the
// least offset among its running replicas (any of them may be promoted), converted to script
// calls at the primary's average bytes per call since it became primary (sampleTenures), times the most tokens one call debits
// (Run.DebitTokens: in lease mode a lost grant returns its whole lease). The replicas are read
// first and the primary after, each on its probe (INFO on the node itself), so every write up
// to the primary's answer is in the gap; only what it takes between that answer and the fault
// is not. An error says why the gap could not be read: it is then not measured, never 0.
func (r *Runner) replicationGap(ctx context.Context, addr string) (tokens float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	running := runningFunc(r.cl.Nodes())
	replica, seen := int64(-1), 0
	for _, n := range r.cl.ReplicasOf(addr) {
		if !running(n) {
			continue
		}
		seen++
		info, err := r.info(ctx, n, "replication")
		if err != nil {
			return 0, fmt.Errorf("replica %s: %w", n.Addr, err)
		}
		off, err := infoInt(info, "slave_repl_offset")
		if err != nil {
			return 0, fmt.Errorf("replica %s: %w", n.Addr, err)
		}
		if replica < 0 || off < replica {
			replica = off
		}
	}
	if seen == 0 {
		return 0, errors.New("it has no running replica: nothing is promoted, and what a restart loses is not a replication gap")
	}
	info, err := r.info(ctx, r.nodeAt(addr), "replication", "commandstats")
	if err != nil {
		return 0, fmt.Errorf("primary %s: %w", addr, err)
	}
	primary, err := infoInt(info, "master_repl_offset")
	if err != nil {
		return 0, fmt.Errorf("primary %s: %w", addr, err)
	}
	gap := max(primary-replica, 0)
	if gap == 0 {
		r.cfg.Logf("replication gap of %s before the fault: 0 bytes", addr)
		return 0, nil
	}
	r.mu.Lock()
	base := r.tenures[addr]
	r.mu.Unlock()
	calls := scriptCalls(info) - base.calls
	if base.replid != info["master_replid"] || calls <= 0 {
		return 0, fmt.Errorf("%d bytes behind, but no script call was counted on it since it became primary (sampled every %s), so the bytes one call writes are not known", gap, tenurePeriod)
	}
	debits := float64(gap) / (float64(primary-base.off) / float64(calls))
	tokens = debits * float64(max(r.run.DebitTokens(), 1))
	r.cfg.Logf("replication gap of %s before the fault: %d bytes (~%.1f script calls at %.0f bytes each, %.1f tokens)", addr, gap, debits, float64(primary-base.off)/float64(calls), tokens)
	return tokens, nil
}

// info reads INFO sections on node n's probe.
func (r *Runner) info(ctx context.Context, n cluster.Node, sections ...string) (map[string]string, error) {
	c, done := r.probe(n)
	defer done()
	s, err := c.Info(ctx, sections...).Result()
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", strings.Join(sections, " "), err)
	}
	m := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// infoInt is the integer field name of an INFO reply.
func infoInt(info map[string]string, name string) (int64, error) {
	v, err := strconv.ParseInt(info[name], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO field %s %q: not an integer", name, info[name])
	}
	return v, nil
}

// scriptCalls counts the script calls (EVALSHA and EVAL) of an INFO commandstats reply.
func scriptCalls(info map[string]string) int64 {
	var n int64
	for _, name := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		for kv := range strings.SplitSeq(info[name], ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				c, _ := strconv.ParseInt(v, 10, 64)
				n += c
			}
		}
	}
	return n
}

// addBound adds tokens to the overspend bound's source, or, when err is set, lists the source
// as not measured for the fault f on addr.
func (r *Runner) addBound(source string, f scenarios.FaultSpec, addr string, tokens float64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		reason := fmt.Sprintf("%s of %s: %v", f.Kind, addr, err)
		r.unmeasured = append(r.unmeasured, results.Unmeasured{Source: source, Reason: reason})
		r.cfg.Logf("overspend bound: %s not measured: %s", source, reason)
		return
	}
	r.sources[source] += tokens
}

// Bound returns what the faults add to the overspend bound, by source (results.Bound.Sources
// names), and the sources they have that could not be measured, with the reasons. A fault's
// tokens bound every key's burst excess and their sum alike: it cannot return more in all.
func (r *Runner) Bound() (map[string]float64, []results.Unmeasured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.sources), append([]results.Unmeasured(nil), r.unmeasured...)
}

// nodeClient is a client of the single node on addr with the cluster's user, password and TLS
// (a plain client without them would be refused by a cluster with RequirePass or TLS).
func (r *Runner) nodeClient(addr string) *redis.Client {
	o := &redis.Options{Addr: addr, MaxRetries: -1}
	if r.cl != nil {
		co := r.cl.ClientOptions()
		o.Username, o.Password, o.TLSConfig = co.Username, co.Password, co.TLSConfig
	}
	return redis.NewClient(o)
}
