package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ReplOffsets reads INFO replication of the primary on primaryAddr (announced or real address;
// asked over the control connection, so a latency fault on the node's proxy does not delay the
// answer) and returns its master_repl_offset and, per replica, the offset that replica last
// acknowledged (the slaveN lines), keyed by the replica's Node.Addr. Offsets are bytes of the
// replication stream.
//
// A replica acknowledges about once a second (REPLCONF ACK) and when asked (WAIT), so its offset
// here may be up to ~1 s of writes behind what it has applied: primary - replica is an upper
// bound of the bytes a failover to that replica would lose, which is what the overspend bound
// needs.
func (l *Local) ReplOffsets(ctx context.Context, primaryAddr string) (primary int64, replicas map[string]int64, err error) {
	m, err := l.member(primaryAddr)
	if err != nil {
		return 0, nil, err
	}
	s, err := m.client.Info(ctx, "replication").Result()
	if err != nil {
		return 0, nil, fmt.Errorf("cluster: INFO replication on %s: %w", m.Addr, err)
	}
	info := parseInfo(s)
	if role := info["role"]; role != "master" {
		return 0, nil, fmt.Errorf("cluster: ReplOffsets(%s): the node's role is %q, want a primary; resolve one with PrimaryFor", primaryAddr, role)
	}
	primary, replicas, err = parseReplOffsets(info)
	if err != nil {
		return 0, nil, fmt.Errorf("cluster: INFO replication on %s: %w", m.Addr, err)
	}
	out := make(map[string]int64, len(replicas))
	for addr, off := range replicas {
		out[l.announced(addr)] = off
	}
	return primary, out, nil
}

// announced maps a node's announced or real address to its announced one; other addresses are
// returned as they are.
func (l *Local) announced(addr string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.members {
		if m != nil && m.has(addr) {
			return m.Addr
		}
	}
	return addr
}

// parseReplOffsets reads master_repl_offset and the "slaveN:ip=...,port=...,state=...,offset=...,lag=..."
// lines of parsed INFO replication; replicas are keyed "ip:port".
func parseReplOffsets(info map[string]string) (int64, map[string]int64, error) {
	primary, err := strconv.ParseInt(info["master_repl_offset"], 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("master_repl_offset %q: %w", info["master_repl_offset"], err)
	}
	replicas := map[string]int64{}
	for k, v := range info {
		idx, ok := strings.CutPrefix(k, "slave")
		if !ok {
			continue
		}
		if _, err := strconv.Atoi(idx); err != nil {
			continue // slave_repl_offset, slave_read_only, ...
		}
		fields := map[string]string{}
		for f := range strings.SplitSeq(v, ",") {
			if a, b, ok := strings.Cut(f, "="); ok {
				fields[a] = b
			}
		}
		off, err := strconv.ParseInt(fields["offset"], 10, 64)
		port, perr := strconv.Atoi(fields["port"])
		if err != nil || !validHost(fields["ip"]) || perr != nil || port <= 0 || port > 65535 {
			return 0, nil, fmt.Errorf("%s line %q: want ip=HOST,port=1..65535,offset=N", k, v)
		}
		replicas[net.JoinHostPort(fields["ip"], fields["port"])] = off
	}
	return primary, replicas, nil
}

// validHost reports whether h is an IP address or a DNS name (letters, digits, '-', '.'), what
// Redis puts in a replica's ip= field; anything else would make an address nobody can dial.
func validHost(h string) bool {
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
