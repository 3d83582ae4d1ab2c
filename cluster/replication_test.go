package cluster

import (
	"maps"
	"net"
	"strings"
	"testing"
)

// infoReplication is INFO replication of a Redis 7.0 primary with two replicas.
const infoReplication = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
	"slave0:ip=127.0.0.1,port=40001,state=online,offset=1234,lag=0\r\n" +
	"slave1:ip=127.0.0.1,port=40002,state=wait_bgsave,offset=0,lag=1\r\n" +
	"master_failover_state:no-failover\r\nmaster_replid:8f1c\r\nmaster_repl_offset:1300\r\n" +
	"second_repl_offset:-1\r\nrepl_backlog_active:1\r\n"

func TestParseReplOffsets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		have        string
		wantPrimary int64
		wantReps    map[string]int64
		wantErr     string
	}{
		{"two replicas", infoReplication, 1300, map[string]int64{"127.0.0.1:40001": 1234, "127.0.0.1:40002": 0}, ""},
		{"no replicas", "role:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n", 0, map[string]int64{}, ""},
		{"replica fields ignored", "role:master\r\nmaster_repl_offset:7\r\nslave_read_only:1\r\nslave_repl_offset:7\r\n", 7, map[string]int64{}, ""},
		{"no offset", "role:master\r\n", 0, nil, "master_repl_offset"},
		{"bad replica line", "master_repl_offset:5\r\nslave0:ip=127.0.0.1,port=1,state=online\r\n", 0, nil, "slave0"},
	}
	for _, tt := range tests {
		primary, reps, err := parseReplOffsets(parseInfo(tt.have))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want it to contain %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || primary != tt.wantPrimary || !maps.Equal(reps, tt.wantReps) {
			t.Errorf("%s: parseReplOffsets = %d, %v, %v; want %d, %v", tt.name, primary, reps, err, tt.wantPrimary, tt.wantReps)
		}
	}
}

// FuzzParseReplOffsets: any INFO text parses to offsets or an error, never a panic; replicas
// are only reported with an address that has a host and a port.
func FuzzParseReplOffsets(f *testing.F) {
	f.Add(infoReplication)
	f.Add("master_repl_offset:1\r\nslave0:ip=,port=,offset=x\r\n")
	f.Add("slave9999999999999999999:offset=1,ip=a,port=b\nmaster_repl_offset:-5")
	f.Fuzz(func(t *testing.T, s string) {
		_, reps, err := parseReplOffsets(parseInfo(s))
		if err != nil && reps != nil {
			t.Errorf("error %v with replicas %v", err, reps)
		}
		for addr := range reps {
			if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" {
				t.Errorf("replica address %q: host %q, port %q, %v", addr, host, port, err)
			}
		}
	})
}
