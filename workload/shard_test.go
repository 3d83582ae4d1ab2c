package workload

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have string
		want Shard
	}{
		{"0/1", Shard{0, 1}},
		{"0/2", Shard{0, 2}},
		{"3/4", Shard{3, 4}},
		{" 1 / 8 ", Shard{1, 8}},
	}
	for _, tt := range tests {
		have, err := ParseShard(tt.have)
		if err != nil || have != tt.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", tt.have, have, err, tt.want)
		}
		if back, err := ParseShard(have.String()); err != nil || back != have {
			t.Errorf("ParseShard(%q.String() = %q) = %v, %v", tt.have, have.String(), back, err)
		}
	}
}

func TestParseShardRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have string
		// every error names the flag and the value, and says how to fix it
		wantText string
	}{
		{"", "write INDEX/COUNT"},
		{"2", "write INDEX/COUNT"},
		{"a/2", "whole numbers"},
		{"1/b", "whole numbers"},
		{"1.5/4", "whole numbers"},
		{"0/0", "want 1 or more generators"},
		{"0/-2", "want 1 or more generators"},
		{"2/2", "want 0 <= index < 2"},
		{"-1/2", "want 0 <= index < 2"},
		{"5/4", "want 0 <= index < 4"},
	}
	for _, tt := range tests {
		_, err := ParseShard(tt.have)
		if err == nil {
			t.Errorf("ParseShard(%q) = nil error", tt.have)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(msg, "--shard") ||
			!strings.Contains(msg, `"`+tt.have+`"`) || !strings.Contains(msg, tt.wantText) {
			t.Errorf("ParseShard(%q) = %q; want ErrInvalid naming --shard, the value and %q", tt.have, msg, tt.wantText)
		}
	}
}

// Every tenant is owned by exactly one shard, and shard i owns tenants i, i+N, ...
func TestShardOwnsPartitions(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 7} {
		for tenant := range uint64(100) {
			owners := 0
			for i := range n {
				if (Shard{i, n}).Owns(tenant) {
					owners++
					if tenant%uint64(n) != uint64(i) {
						t.Errorf("shard %d/%d owns tenant %d; want tenant mod %d == %d", i, n, tenant, n, i)
					}
				}
			}
			if owners != 1 {
				t.Errorf("tenant %d has %d owners among %d shards, want 1", tenant, owners, n)
			}
		}
	}
	if !(Shard{}).Owns(12345) || (Shard{}).Sharded() {
		t.Errorf("the zero Shard must own every tenant and not be sharded")
	}
}

// BenchmarkShardSchedule is what a shard pays for every request of the whole schedule (its own
// and the other shards'): one Poisson arrival, one key and endpoint draw, one ownership test.
// Its scheduled/s is the total rate above which every shard drawing the whole schedule becomes
// the generator's bottleneck.
func BenchmarkShardSchedule(b *testing.B) {
	keys, err := NewZipf(1_000_000, 0.99)
	if err != nil {
		b.Fatal(err)
	}
	mix, err := NewMix([]string{"read", "write", "export"}, []float64{0.7, 0.25, 0.05})
	if err != nil {
		b.Fatal(err)
	}
	pacer, err := NewPoisson(1e12, time.Hour, 1)
	if err != nil {
		b.Fatal(err)
	}
	s := NewStream(1, keys, mix)
	sh := Shard{Index: 3, Count: 8}
	var own int
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		pacer.Next()
		if t, _ := s.Next(); sh.Owns(t) {
			own++
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scheduled/s")
	if b.N >= 10000 && own == 0 {
		b.Fatal("shard 3/8 owned nothing")
	}
}
