package faults

import "testing"

func TestParseNodeViews(t *testing.T) {
	t.Parallel()
	text := `07c3 127.0.0.1:30004@40004 master,fail - 1700000000000 1700000000000 7 connected 0-5460
a1b2 127.0.0.1:30001@40001 myself,master - 0 1700000000000 2 connected 5461-10922 10930 [10931->-e7d1]
9f9f 127.0.0.1:30002@40002 master,fail? - 1700000000000 0 3 disconnected
c3c3 127.0.0.1:30005@40005 slave a1b2 0 1700000000000 2 connected
`
	v := ParseNodeViews(text)
	if len(v) != 4 {
		t.Fatalf("got %d nodes, want 4: %+v", len(v), v)
	}
	if v[0].Addr != "127.0.0.1:30004" || !v[0].Failing() || !v[0].Primary() || v[0].Slots != 5461 {
		t.Errorf("node 0 = %+v, want a failing primary of 5461 slots", v[0])
	}
	if v[1].Failing() || v[1].Slots != 5463 {
		t.Errorf("node 1 = %+v, want a sound primary of 5463 slots (a migrating slot is not served twice)", v[1])
	}
	if !v[2].Failing() || v[2].Slots != 0 {
		t.Errorf("node 2 = %+v, want fail? and no slots", v[2])
	}
	if v[3].Primary() || v[3].Failing() {
		t.Errorf("node 3 = %+v, want a sound replica", v[3])
	}
}
