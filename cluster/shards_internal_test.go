package cluster

import (
	"strings"
	"testing"
)

// A CLUSTER NODES reply as redis-cli --cluster create leaves a 3x1 cluster on one host, lines in
// the order Redis prints them (by node ID), plus a primary without slots and a node in handshake;
// ports chosen so that text order and numeric order differ.
const redisCLIReply = `11aa 127.0.0.1:9004@19004 slave 33cc 0 1 3 connected
22bb 127.0.0.1:10000@20000 myself,master - 0 1 2 connected 5461-10922
33cc 127.0.0.1:9001@19001 master - 0 1 1 connected 0-5460
44dd 127.0.0.1:9005@19005 slave 22bb 0 1 2 connected
55ee 127.0.0.1:9003@19003 master - 0 1 4 connected 10923-16383
66ff 127.0.0.1:9006@19006 slave 55ee 0 1 4 connected
77aa 127.0.0.1:9007@19007 slave 33cc 0 1 1 connected
88bb 127.0.0.1:9002@19002 master - 0 1 0 connected
99cc 127.0.0.1:9008@19008 handshake - 0 1 0 connected
`

// slotOrder lists primaries by their lowest slot, then slot-less primaries, then replicas in
// rounds (one per primary, primaries in slot order), then the rest.
func TestSlotOrder(t *testing.T) {
	t.Parallel()
	view, err := parseClusterNodes(redisCLIReply)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, v := range slotOrder(view) {
		have = append(have, v.Addr)
	}
	want := []string{
		"127.0.0.1:9001", "127.0.0.1:10000", "127.0.0.1:9003", // primaries by lowest slot
		"127.0.0.1:9002",                                     // a primary without slots
		"127.0.0.1:9004", "127.0.0.1:9005", "127.0.0.1:9006", // first replica of each, in slot order
		"127.0.0.1:9007", // the second replica of the first primary
		"127.0.0.1:9008", // no role yet
	}
	if strings.Join(have, " ") != strings.Join(want, " ") {
		t.Errorf("slotOrder:\n have %v\n want %v", have, want)
	}
	// After a failover of the first shard (its replica 9004 takes slots 0-5460 over), the
	// promoted replica heads the order and the old primary is its first replica.
	after := strings.NewReplacer(
		"11aa 127.0.0.1:9004@19004 slave 33cc 0 1 3 connected", "11aa 127.0.0.1:9004@19004 master - 0 1 5 connected 0-5460",
		"33cc 127.0.0.1:9001@19001 master - 0 1 1 connected 0-5460", "33cc 127.0.0.1:9001@19001 slave 11aa 0 1 5 connected",
		"77aa 127.0.0.1:9007@19007 slave 33cc", "77aa 127.0.0.1:9007@19007 slave 11aa",
	).Replace(redisCLIReply)
	if view, err = parseClusterNodes(after); err != nil {
		t.Fatal(err)
	}
	have = have[:0]
	for _, v := range slotOrder(view)[:5] {
		have = append(have, v.Addr)
	}
	if want := "127.0.0.1:9004 127.0.0.1:10000 127.0.0.1:9003 127.0.0.1:9002 127.0.0.1:9001"; strings.Join(have, " ") != want {
		t.Errorf("slotOrder after a failover starts %v, want %s", have, want)
	}
}

func TestCompareAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"127.0.0.1:7000", "127.0.0.1:10000", -1},
		{"127.0.0.1:7000", "127.0.0.1:7000", 0},
		{"10.0.0.2:1", "10.0.0.1:2", 1},
		{"[::1]:7000", "[::1]:700", 1},
	}
	for _, tt := range tests {
		if have := compareAddr(tt.a, tt.b); have != tt.want {
			t.Errorf("compareAddr(%s, %s) = %d, want %d", tt.a, tt.b, have, tt.want)
		}
	}
}
