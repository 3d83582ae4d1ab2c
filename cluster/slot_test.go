package cluster_test

import (
	"testing"

	"ratelab/cluster"
)

// Expected slots were read from redis-server 7.0.15 with CLUSTER KEYSLOT.
func TestKeySlot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"", 0},
		{"123456789", 12739}, // CRC16/XMODEM check value 0x31C3
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", 8363},    // empty first tag: the whole key is hashed
		{"foo{{bar}}zap", 4015}, // tag is "{bar"
		{"foo{bar}{zap}", 5061}, // first tag only: same as "bar"
		{"rl:{t1}:a", 8943},
		{"{}", 15257},
		{"a{b", 13340}, // unclosed brace: whole key
	}
	for _, tt := range tests {
		if have := cluster.KeySlot(tt.key); have != tt.want {
			t.Errorf("KeySlot(%q) = %d, want %d", tt.key, have, tt.want)
		}
	}
}

func BenchmarkKeySlot(b *testing.B) {
	key := "rl:{tenant-000042}:/api/v1/orders"
	b.ReportAllocs()
	sum := 0
	for b.Loop() {
		sum += cluster.KeySlot(key)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "slots/s")
	_ = sum
}
