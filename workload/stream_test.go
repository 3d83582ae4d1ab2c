package workload

import (
	"testing"
)

type draw struct {
	tenant   uint64
	endpoint int
}

func readStream(s *Stream, n int) []draw {
	out := make([]draw, n)
	for i := range out {
		out[i].tenant, out[i].endpoint = s.Next()
	}
	return out
}

func equalDraws(a, b []draw) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func newTestStreamParts(t testing.TB) (KeyDist, *Mix) {
	t.Helper()
	z, err := NewZipf(10_000, DefaultTheta)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMix([]string{"read", "write", "admin"}, []float64{8, 2, 0.1})
	if err != nil {
		t.Fatal(err)
	}
	return z, m
}

func TestStreamReproducible(t *testing.T) {
	t.Parallel()
	z, m := newTestStreamParts(t)
	const n = 5000
	used := NewStream(42, z, m)
	readStream(used, 777) // consuming a parent must not change its sub-streams
	tests := []struct {
		name     string
		have     []draw
		want     []draw
		wantSame bool
	}{
		{"same seed", readStream(NewStream(42, z, m), n), readStream(NewStream(42, z, m), n), true},
		{"next seed", readStream(NewStream(43, z, m), n), readStream(NewStream(42, z, m), n), false},
		{"split 0 vs parent", readStream(NewStream(42, z, m).Split(0), n), readStream(NewStream(42, z, m), n), false},
		{"split 0 vs split 1", readStream(NewStream(42, z, m).Split(0), n), readStream(NewStream(42, z, m).Split(1), n), false},
		{"split of a used parent", readStream(used.Split(3), n), readStream(NewStream(42, z, m).Split(3), n), true},
		{"split is DeriveSeed", readStream(used.Split(3), n), readStream(NewStream(DeriveSeed(42, 3), z, m), n), true},
	}
	for _, tt := range tests {
		if have := equalDraws(tt.have, tt.want); have != tt.wantSame {
			t.Errorf("%s: equal = %v, want %v", tt.name, have, tt.wantSame)
		}
	}
}

// TestStreamSplitIndependent: sub-streams must not be shifted copies of each other. Compare the
// tenant sequences of 16 sub-streams pairwise at every lag in [-8, 8]: two independent Zipf
// streams over 10,000 ranks with theta 0.99 agree on a position with probability
// sum P(k)^2 ~ 0.06, so about 60 of 1,000 positions; a shifted copy would agree on ~1,000.
func TestStreamSplitIndependent(t *testing.T) {
	t.Parallel()
	z, m := newTestStreamParts(t)
	parent := NewStream(9, z, m)
	const subs, n = 16, 1000
	seqs := make([][]draw, subs)
	for i := range seqs {
		seqs[i] = readStream(parent.Split(uint64(i)), n)
	}
	for a := range seqs {
		for b := a + 1; b < subs; b++ {
			for lag := -8; lag <= 8; lag++ {
				same := 0
				for i := max(0, -lag); i < n && i+lag < n; i++ {
					if seqs[a][i].tenant == seqs[b][i+lag].tenant {
						same++
					}
				}
				if same > 150 {
					t.Fatalf("sub-streams %d and %d agree on %d of %d tenants at lag %d", a, b, same, n, lag)
				}
			}
		}
	}
}

func TestDeriveSeedDistinct(t *testing.T) {
	t.Parallel()
	seen := make(map[uint64]string)
	for _, parent := range []uint64{0, 1, 2, 42, 1 << 63} {
		for i := range uint64(2000) {
			s := DeriveSeed(parent, i)
			key := [2]uint64{parent, i}
			if prev, dup := seen[s]; dup {
				t.Fatalf("DeriveSeed%v = %#x collides with %s", key, s, prev)
			}
			seen[s] = "an earlier (parent, i)"
		}
	}
	if DeriveSeed(5, 6) != DeriveSeed(5, 6) {
		t.Fatal("DeriveSeed is not a function of its inputs")
	}
}

func TestStreamNilMixAndNilKeys(t *testing.T) {
	t.Parallel()
	u, err := NewUniform(3)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStream(1, u, nil)
	for range 100 {
		if tenant, endpoint := s.Next(); tenant >= 3 || endpoint != 0 {
			t.Fatalf("Next = %d, %d; want tenant < 3 and endpoint 0", tenant, endpoint)
		}
	}
	if s.Seed() != 1 {
		t.Fatalf("Seed() = %d, want 1", s.Seed())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("NewStream(nil keys) did not panic")
		}
	}()
	NewStream(1, nil, nil)
}

func BenchmarkStreamNext(b *testing.B) {
	z, m := newTestStreamParts(b)
	s := NewStream(1, z, m)
	b.ReportAllocs()
	var sink uint64
	for b.Loop() {
		tenant, endpoint := s.Next()
		sink += tenant + uint64(endpoint)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
	_ = sink
}
