package workload

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParsePart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have string
		want Part
	}{
		{"0/1", Part{0, 1}},
		{"0/2", Part{0, 2}},
		{"3/4", Part{3, 4}},
		{" 1 / 8 ", Part{1, 8}},
	}
	for _, tt := range tests {
		have, err := ParsePart(tt.have)
		if err != nil || have != tt.want {
			t.Errorf("ParsePart(%q) = %v, %v; want %v", tt.have, have, err, tt.want)
		}
		if back, err := ParsePart(have.String()); err != nil || back != have {
			t.Errorf("ParsePart(%q.String() = %q) = %v, %v", tt.have, have.String(), back, err)
		}
	}
}

func TestParsePartRejects(t *testing.T) {
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
		_, err := ParsePart(tt.have)
		if err == nil {
			t.Errorf("ParsePart(%q) = nil error", tt.have)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(msg, "--part") ||
			!strings.Contains(msg, `"`+tt.have+`"`) || !strings.Contains(msg, tt.wantText) {
			t.Errorf("ParsePart(%q) = %q; want ErrInvalid naming --part, the value and %q", tt.have, msg, tt.wantText)
		}
	}
}

// Every tenant is owned by exactly one part, and part i owns tenants i, i+N, ...
func TestPartOwnsPartitions(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 7} {
		for tenant := range uint64(100) {
			owners := 0
			for i := range n {
				if (Part{i, n}).Owns(tenant) {
					owners++
					if tenant%uint64(n) != uint64(i) {
						t.Errorf("part %d/%d owns tenant %d; want tenant mod %d == %d", i, n, tenant, n, i)
					}
				}
			}
			if owners != 1 {
				t.Errorf("tenant %d has %d owners among %d parts, want 1", tenant, owners, n)
			}
		}
	}
	if !(Part{}).Owns(12345) || (Part{}).Split() {
		t.Errorf("the zero Part must own every tenant and not be split")
	}
}

// BenchmarkPartSchedule is what a part pays for every request of the whole schedule (its own
// and the other parts'): one Poisson arrival, one key and endpoint draw, one ownership test.
// Its scheduled/s is the total rate above which every part drawing the whole schedule becomes
// the generator's bottleneck.
func BenchmarkPartSchedule(b *testing.B) {
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
	sh := Part{Index: 3, Count: 8}
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
		b.Fatal("part 3/8 owned nothing")
	}
}
