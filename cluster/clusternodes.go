package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SlotRange is an inclusive range of hash slots [Start, End].
type SlotRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (r SlotRange) String() string {
	if r.Start == r.End {
		return strconv.Itoa(r.Start)
	}
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// Len is the number of slots in r.
func (r SlotRange) Len() int { return r.End - r.Start + 1 }

// nodeLine is one line of CLUSTER NODES:
//
//	<id> <ip:port@cport[,hostname]> <flags> <primary|-> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot>...
//
// Slot entries are "N", "A-B", or migration markers "[N->-id]" / "[N-<-id]", which are skipped.
type nodeLine struct {
	ID          string
	Addr        string // "ip:port", without the bus port and hostname
	BusPort     int    // the cluster bus port after "@"; 0 when absent
	Flags       []string
	PrimaryID   string // "" when the field is "-"
	ConfigEpoch int64
	Connected   bool
	Slots       []SlotRange
}

func (n nodeLine) has(flag string) bool { return slices.Contains(n.Flags, flag) }

// role maps Redis flags to RolePrimary / RoleReplica ("" when neither, e.g. during a handshake).
func (n nodeLine) role() string {
	switch {
	case n.has("master"):
		return RolePrimary
	case n.has("slave"):
		return RoleReplica
	}
	return ""
}

// parseClusterNodes parses the reply of CLUSTER NODES.
func parseClusterNodes(s string) ([]nodeLine, error) {
	var out []nodeLine
	for i, line := range strings.Split(strings.TrimSpace(s), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("cluster: CLUSTER NODES line %d has %d fields, want >= 8: %q", i+1, len(f), line)
		}
		addr, bus, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		bus, _, _ = strings.Cut(bus, ",")
		busPort, _ := strconv.Atoi(bus) // absent or unparsable: 0, as nothing depends on it but Partitionable
		n := nodeLine{ID: f[0], Addr: addr, BusPort: busPort, Flags: strings.Split(f[2], ","), Connected: f[7] == "connected"}
		if f[3] != "-" {
			n.PrimaryID = f[3]
		}
		epoch, err := strconv.ParseInt(f[6], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cluster: CLUSTER NODES line %d: config epoch %q: %w", i+1, f[6], err)
		}
		n.ConfigEpoch = epoch
		for _, sl := range f[8:] {
			if strings.HasPrefix(sl, "[") {
				continue // slot being imported/migrated
			}
			r, err := parseSlotRange(sl)
			if err != nil {
				return nil, fmt.Errorf("cluster: CLUSTER NODES line %d: %w", i+1, err)
			}
			n.Slots = append(n.Slots, r)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSlotRange parses "N" or "A-B".
func parseSlotRange(s string) (SlotRange, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := strconv.Atoi(a)
	if err != nil {
		return SlotRange{}, fmt.Errorf("slot %q: %w", s, err)
	}
	hi := lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil {
			return SlotRange{}, fmt.Errorf("slot %q: %w", s, err)
		}
	}
	if lo < 0 || hi >= TotalSlots || lo > hi {
		return SlotRange{}, fmt.Errorf("slot range %q outside 0-%d", s, TotalSlots-1)
	}
	return SlotRange{Start: lo, End: hi}, nil
}

// parseInfo parses "key:value" lines of CLUSTER INFO / INFO; section headers and blanks are skipped.
func parseInfo(s string) map[string]string {
	m := make(map[string]string)
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// evenSlots splits the 16384 slots into n contiguous ranges whose sizes differ by at most one:
// range i is [i*16384/n, (i+1)*16384/n - 1] (integer division), as redis-cli does.
func evenSlots(n int) []SlotRange {
	out := make([]SlotRange, n)
	for i := range n {
		out[i] = SlotRange{Start: i * TotalSlots / n, End: (i+1)*TotalSlots/n - 1}
	}
	return out
}

// topologyKey renders a view of CLUSTER NODES that all nodes must share once the cluster is
// formed: one sorted entry per node with its role, primary and slots; "myself" and timing fields
// are left out because they differ between observers.
func topologyKey(view []nodeLine) string {
	keys := make([]string, 0, len(view))
	for _, n := range view {
		slots := make([]string, len(n.Slots))
		for i, r := range n.Slots {
			slots[i] = r.String()
		}
		keys = append(keys, fmt.Sprintf("%s %s %s %s %s", n.ID, n.Addr, n.role(), n.PrimaryID, strings.Join(slots, ",")))
	}
	slices.Sort(keys)
	return strings.Join(keys, "\n")
}
