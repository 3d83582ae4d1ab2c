package cluster

import (
	"slices"
	"strings"
	"testing"
)

// A CLUSTER NODES reply of redis 7.0.15 after a failover (node 3 promoted, node 0 failed), with a
// slot being migrated.
const nodesReply = `0a9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 127.0.0.1:7000@17000 master,fail - 1700000000000 1700000000000 1 disconnected
1b9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 127.0.0.1:7001@17001 myself,master - 0 1700000000000 2 connected 5461-10921 [5000->-0a9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e]
2c9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 127.0.0.1:7002@17002,host.example master - 0 1700000000000 3 connected 10922-16383
3d9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 127.0.0.1:7003@17003 master - 0 1700000000000 7 connected 0-5460
4e9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 127.0.0.1:7004@17004 slave 1b9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 0 1700000000000 2 connected
5f9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 127.0.0.1:7005@17005 slave 2c9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 0 1700000000000 3 connected 42
`

func TestParseClusterNodes(t *testing.T) {
	t.Parallel()
	view, err := parseClusterNodes(nodesReply)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		addr, role, primary string
		epoch               int64
		connected           bool
		slots               []SlotRange
		fail, myself        bool
	}
	want := []row{
		{"127.0.0.1:7000", RolePrimary, "", 1, false, nil, true, false},
		{"127.0.0.1:7001", RolePrimary, "", 2, true, []SlotRange{{5461, 10921}}, false, true},
		{"127.0.0.1:7002", RolePrimary, "", 3, true, []SlotRange{{10922, 16383}}, false, false},
		{"127.0.0.1:7003", RolePrimary, "", 7, true, []SlotRange{{0, 5460}}, false, false},
		{"127.0.0.1:7004", RoleReplica, "1b9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e", 2, true, nil, false, false},
		{"127.0.0.1:7005", RoleReplica, "2c9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e", 3, true, []SlotRange{{42, 42}}, false, false},
	}
	if len(view) != len(want) {
		t.Fatalf("parsed %d lines, want %d", len(view), len(want))
	}
	for i, v := range view {
		have := row{v.Addr, v.role(), v.PrimaryID, v.ConfigEpoch, v.Connected, v.Slots, v.has("fail"), v.has("myself")}
		w := want[i]
		if have.addr != w.addr || have.role != w.role || have.primary != w.primary || have.epoch != w.epoch ||
			have.connected != w.connected || !slices.Equal(have.slots, w.slots) || have.fail != w.fail || have.myself != w.myself {
			t.Errorf("line %d = %+v, want %+v", i, have, w)
		}
		if want := 17000 + i; v.BusPort != want { // line 2 also carries a hostname
			t.Errorf("line %d: bus port %d, want %d", i, v.BusPort, want)
		}
	}
}

// TestNodeViews: the exported view keeps every field and answers the flag questions.
func TestNodeViews(t *testing.T) {
	t.Parallel()
	lines, err := parseClusterNodes(nodesReply + "6a9f6cbd1f9d3b9d9c0cbdf21fbd4d7a8b1c2d3e 127.0.0.1:7006@17006 master,fail? - 0 0 8 disconnected\n")
	if err != nil {
		t.Fatal(err)
	}
	views := nodeViews(lines)
	type row struct {
		addr, role                string
		bus                       int
		myself, suspected, failed bool
		connected                 bool
	}
	want := map[int]row{
		0: {"127.0.0.1:7000", RolePrimary, 17000, false, false, true, false},
		1: {"127.0.0.1:7001", RolePrimary, 17001, true, false, false, true},
		4: {"127.0.0.1:7004", RoleReplica, 17004, false, false, false, true},
		6: {"127.0.0.1:7006", RolePrimary, 17006, false, true, false, false},
	}
	for i, w := range want {
		v := views[i]
		if have := (row{v.Addr, v.Role, v.BusPort, v.Myself(), v.Suspected(), v.Failed(), v.Connected}); have != w {
			t.Errorf("view %d = %+v, want %+v", i, have, w)
		}
	}
	if v := views[4]; v.PrimaryID != lines[4].PrimaryID || v.ID != lines[4].ID || v.ConfigEpoch != 2 {
		t.Errorf("view 4 = %+v, want ID, primary and epoch of %+v", v, lines[4])
	}
	if v := views[1]; !slices.Equal(v.Slots, []SlotRange{{5461, 10921}}) {
		t.Errorf("view 1 slots = %v, want [5461-10921]", v.Slots)
	}
}

func TestParseClusterNodesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"short line", "abc 127.0.0.1:1@2 master -", "has 4 fields"},
		{"bad epoch", "a 127.0.0.1:1@2 master - 0 0 x connected", "config epoch"},
		{"bad slot", "a 127.0.0.1:1@2 master - 0 0 1 connected 1-x", `slot "1-x"`},
		{"slot out of range", "a 127.0.0.1:1@2 master - 0 0 1 connected 0-16384", "outside 0-16383"},
		{"reversed range", "a 127.0.0.1:1@2 master - 0 0 1 connected 9-3", "outside"},
	}
	for _, tt := range tests {
		_, err := parseClusterNodes(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func FuzzParseClusterNodes(f *testing.F) {
	f.Add(nodesReply)
	f.Add("a 127.0.0.1:1@2 master - 0 0 1 connected 0-16383")
	f.Fuzz(func(t *testing.T, s string) {
		view, err := parseClusterNodes(s)
		if err != nil {
			return
		}
		for _, v := range view {
			for _, r := range v.Slots {
				if r.Start < 0 || r.End >= TotalSlots || r.Start > r.End || r.Len() < 1 {
					t.Fatalf("accepted slot range %v from %q", r, s)
				}
			}
		}
		_ = topologyKey(view)
	})
}

func TestEvenSlots(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want []SlotRange
	}{
		{1, []SlotRange{{0, 16383}}},
		{2, []SlotRange{{0, 8191}, {8192, 16383}}},
		{3, []SlotRange{{0, 5460}, {5461, 10921}, {10922, 16383}}}, // as redis-cli --cluster create
	}
	for _, tt := range tests {
		if have := evenSlots(tt.n); !slices.Equal(have, tt.want) {
			t.Errorf("evenSlots(%d) = %v, want %v", tt.n, have, tt.want)
		}
	}
	// Any n: contiguous, complete, sizes differ by at most one.
	for n := 1; n <= 100; n++ {
		r := evenSlots(n)
		next, lo, hi := 0, TotalSlots, 0
		for _, s := range r {
			if s.Start != next {
				t.Fatalf("evenSlots(%d): range %v starts at %d, want %d", n, s, s.Start, next)
			}
			next = s.End + 1
			lo, hi = min(lo, s.Len()), max(hi, s.Len())
		}
		if next != TotalSlots || hi-lo > 1 {
			t.Fatalf("evenSlots(%d): covers up to %d (want %d), sizes %d..%d", n, next, TotalSlots, lo, hi)
		}
	}
}

func TestParseInfo(t *testing.T) {
	t.Parallel()
	in := "# Cluster\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\n\r\nweird line\r\nk:v:w\r\n"
	have := parseInfo(in)
	want := map[string]string{"cluster_state": "ok", "cluster_slots_assigned": "16384", "k": "v:w"}
	if len(have) != len(want) {
		t.Fatalf("parseInfo = %v, want %v", have, want)
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("parseInfo[%q] = %q, want %q", k, have[k], v)
		}
	}
}

func TestTopologyKeyIgnoresObserver(t *testing.T) {
	t.Parallel()
	a, err := parseClusterNodes(nodesReply)
	if err != nil {
		t.Fatal(err)
	}
	// The same cluster seen from node 7002: "myself" moves, timings differ, line order differs.
	b := slices.Clone(a)
	slices.Reverse(b)
	for i := range b {
		b[i].Flags = slices.DeleteFunc(slices.Clone(b[i].Flags), func(f string) bool { return f == "myself" })
		if b[i].Addr == "127.0.0.1:7002" {
			b[i].Flags = append(b[i].Flags, "myself")
		}
	}
	if topologyKey(a) != topologyKey(b) {
		t.Errorf("topologyKey differs between observers:\n%s\n---\n%s", topologyKey(a), topologyKey(b))
	}
	b[0].Slots = []SlotRange{{0, 1}}
	if topologyKey(a) == topologyKey(b) {
		t.Error("topologyKey ignores a slot change")
	}
}
