package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have Options
		want []string // substrings of the error; nil = valid
	}{
		{"zero value", Options{}, nil},
		{"1x0", Options{Primaries: 1, Replicas: NoReplicas}, nil},
		{"base port", Options{BasePort: 7000}, nil},
		{"negative primaries", Options{Primaries: -1}, []string{"Primaries = -1"}},
		{"too many replicas", Options{Replicas: 17}, []string{"Replicas = 17"}},
		{"replicas below NoReplicas", Options{Replicas: -2}, []string{"Replicas = -2", "NoReplicas"}},
		{"tiny node timeout", Options{NodeTimeout: time.Microsecond}, []string{"NodeTimeout = 1µs"}},
		{"privileged base port", Options{BasePort: 80}, []string{"BasePort = 80", "or 0 for free ports"}},
		{"bus port past 65535", Options{BasePort: 60000}, []string{"BasePort = 60000"}},
		{"proxy", Options{Proxy: true}, nil},
		{"proxy and detached", Options{Proxy: true, Detached: true}, []string{"Proxy = true with Detached = true"}},
		{"partitionable", Options{Partitionable: true, MinReplicasToWrite: 1, MinReplicasMaxLag: 2}, nil},
		{"partitionable and detached", Options{Partitionable: true, Detached: true}, []string{"Partitionable = true with Detached = true"}},
		{"partitionable and TLS", Options{Partitionable: true, TLS: &TLSFiles{CertFile: "c", KeyFile: "k", CAFile: "a"}}, []string{"Partitionable = true with TLS"}},
		{"partitionable, too many nodes", Options{Partitionable: true, Primaries: 127, Replicas: 1}, []string{"Partitionable = true with 254 nodes", "at most 253"}},
		{"min replicas above replicas", Options{MinReplicasToWrite: 2}, []string{"MinReplicasToWrite = 2", "want 0..1"}},
		{"min replicas without replicas", Options{Primaries: 1, Replicas: NoReplicas, MinReplicasToWrite: 1}, []string{"MinReplicasToWrite = 1", "want 0..0"}},
		{"negative min replicas", Options{MinReplicasToWrite: -1, MinReplicasMaxLag: -1}, []string{"MinReplicasToWrite = -1", "MinReplicasMaxLag = -1"}},
		{"newline in config", Options{ExtraConfig: []string{"maxmemory 1mb\nport 1"}}, []string{"ExtraConfig[0]"}},
		{"every problem at once", Options{Primaries: -1, Replicas: -5}, []string{"Primaries = -1", "Replicas = -5"}},
	}
	for _, tt := range tests {
		err := tt.have.Validate()
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Validate() = nil, want an error containing %q", tt.name, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Validate() = %v, want it to contain %q", tt.name, err, w)
			}
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have                Options
		primaries, replicas int
	}{
		{Options{}, DefaultPrimaries, DefaultReplicas},
		{Options{Primaries: 1}, 1, 0}, // an explicit topology: 0 replicas means none
		{Options{Primaries: 2, Replicas: 0}, 2, 0},
		{Options{Primaries: 2, Replicas: NoReplicas}, 2, 0},
		{Options{Primaries: 3, Replicas: 1}, 3, 1},
		{Options{Replicas: 2}, DefaultPrimaries, 2},
		{Options{Replicas: NoReplicas}, DefaultPrimaries, 0},
	}
	for _, tt := range tests {
		d := tt.have.withDefaults()
		if d.Primaries != tt.primaries || d.Replicas != tt.replicas || d.NodeTimeout != DefaultNodeTimeout || d.RedisServer != DefaultRedisServer || d.Dir == "" || d.Logf == nil {
			t.Errorf("%+v.withDefaults() = %d primaries x %d replicas, timeout %v, server %q, dir %q; want %d x %d and defaults",
				tt.have, d.Primaries, d.Replicas, d.NodeTimeout, d.RedisServer, d.Dir, tt.primaries, tt.replicas)
		}
	}
}

func TestNodeConfig(t *testing.T) {
	t.Parallel()
	o := Options{NodeTimeout: 1500 * time.Millisecond, ExtraConfig: []string{"maxmemory 64mb"}}.withDefaults()
	have := nodeConfig(12345, announce{}, "/tmp/x y", o)
	for _, want := range []string{
		"port 12345\n", "bind 127.0.0.1\n", "cluster-announce-ip 127.0.0.1\n", "cluster-enabled yes\n", "cluster-node-timeout 1500\n",
		"cluster-replica-validity-factor 0\n", "cluster-require-full-coverage yes\n", "save \"\"\n",
		"appendonly no\n", "enable-debug-command local\n", "daemonize no\n", "dir \"/tmp/x y\"\n",
		"repl-diskless-sync-delay 0\n",
	} {
		if !strings.Contains(have, want) {
			t.Errorf("nodeConfig lacks %q:\n%s", want, have)
		}
	}
	if !strings.HasSuffix(have, "maxmemory 64mb\n") {
		t.Errorf("ExtraConfig must come last (later lines win in redis.conf):\n%s", have)
	}
	if strings.Contains(have, "announce-port") {
		t.Errorf("nodeConfig without a proxy announces a port:\n%s", have)
	}
	proxied := nodeConfig(12345, announce{port: 40000}, "/tmp/x y", o)
	for _, want := range []string{
		"cluster-announce-port 40000\n", "cluster-announce-bus-port 22345\n", "replica-announce-port 40000\n", "replica-announce-ip 127.0.0.1\n",
	} {
		if !strings.Contains(proxied, want) {
			t.Errorf("nodeConfig behind a proxy on 40000 lacks %q:\n%s", want, proxied)
		}
	}
	if !strings.HasSuffix(proxied, "maxmemory 64mb\n") {
		t.Errorf("ExtraConfig must come last behind a proxy too:\n%s", proxied)
	}
	if strings.Contains(proxied, "bind-source-addr") {
		t.Errorf("nodeConfig behind a proxy without a source address binds one:\n%s", proxied)
	}
	parted := nodeConfig(12345, announce{port: 40000, busPort: 40001, source: sourceAddr(3)}, "/tmp/x y", o)
	for _, want := range []string{
		"cluster-announce-port 40000\n", "cluster-announce-bus-port 40001\n", "replica-announce-port 40000\n", "bind-source-addr 127.0.0.5\n",
	} {
		if !strings.Contains(parted, want) {
			t.Errorf("nodeConfig of a partitionable node lacks %q:\n%s", want, parted)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have string
		ok   bool
	}{{"7.0.15", true}, {"7.2.4", true}, {"8.0.0", true}, {"6.2.14", false}, {"", false}, {"x.y", false}}
	for _, tt := range tests {
		if err := checkVersion(tt.have); (err == nil) != tt.ok {
			t.Errorf("checkVersion(%q) = %v, want ok=%v", tt.have, err, tt.ok)
		}
	}
}
