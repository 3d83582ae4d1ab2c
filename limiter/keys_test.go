package limiter_test

import (
	"strings"
	"testing"

	"ratelab/limiter"
)

func TestKeyFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tenant, endpoint string
		want             string
	}{
		{"acme", "/v1/orders", "rl:{acme}:/v1/orders"},
		{"t1", "", "rl:{t1}:"},
		{"", "ep", "rl:{}:ep"},
		{"ünï", "çödé", "rl:{ünï}:çödé"},
	}
	for _, tt := range tests {
		if have := limiter.KeyFor(tt.tenant, tt.endpoint); have != tt.want {
			t.Errorf("KeyFor(%q, %q) = %q, want %q", tt.tenant, tt.endpoint, have, tt.want)
		}
		if have := string(limiter.AppendKey([]byte("x"), tt.tenant, tt.endpoint)); have != "x"+tt.want {
			t.Errorf("AppendKey(x, %q, %q) = %q, want %q", tt.tenant, tt.endpoint, have, "x"+tt.want)
		}
		if have := limiter.KeyLen(tt.tenant, tt.endpoint); have != len(tt.want) {
			t.Errorf("KeyLen(%q, %q) = %d, want %d", tt.tenant, tt.endpoint, have, len(tt.want))
		}
	}
}

func TestKeyAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = limiter.AppendKey(buf[:0], "acme", "/v1/orders") }); n != 0 {
		t.Errorf("AppendKey into a large enough buffer: %v allocs, want 0", n)
	}
	var sink string
	long := strings.Repeat("x", 300)
	if n := testing.AllocsPerRun(100, func() { sink = limiter.KeyFor("acme", "/v1/orders") }); n != 1 {
		t.Errorf("KeyFor: %v allocs, want 1 (the string)", n)
	}
	if n := testing.AllocsPerRun(100, func() { sink = limiter.KeyFor(long, long) }); n != 1 {
		t.Errorf("KeyFor of a 600-byte key: %v allocs, want 1 (the string)", n)
	}
	_ = sink
}

func BenchmarkKeyFor(b *testing.B) {
	b.ReportAllocs()
	var sink string
	for b.Loop() {
		sink = limiter.KeyFor("tenant-00042", "/v1/orders")
	}
	_ = sink
}

func BenchmarkAppendKey(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = limiter.AppendKey(buf[:0], "tenant-00042", "/v1/orders")
	}
}
