package workload

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestPacerConstructorErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		build   func() (Pacer, error)
		wantErr string // "" = valid
	}{
		{"constant rate 0", func() (Pacer, error) { return NewConstant(0, time.Second) }, "constant pacer rate 0"},
		{"constant rate negative", func() (Pacer, error) { return NewConstant(-5, time.Second) }, "rate -5"},
		{"constant rate NaN", func() (Pacer, error) { return NewConstant(math.NaN(), time.Second) }, "rate NaN"},
		{"constant rate Inf", func() (Pacer, error) { return NewConstant(math.Inf(1), time.Second) }, "rate +Inf"},
		{"constant duration 0", func() (Pacer, error) { return NewConstant(10, 0) }, "constant pacer duration 0s"},
		{"constant duration negative", func() (Pacer, error) { return NewConstant(10, -time.Second) }, "duration -1s"},
		{"poisson rate 0", func() (Pacer, error) { return NewPoisson(0, time.Second, 1) }, "poisson pacer rate 0"},
		{"poisson duration 0", func() (Pacer, error) { return NewPoisson(10, 0, 1) }, "poisson pacer duration 0s"},
		{"constant tiny rate", func() (Pacer, error) { return NewConstant(1e-6, time.Second) }, ""},
		{"poisson ok", func() (Pacer, error) { return NewPoisson(1e5, time.Second, 1) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.build()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("error = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v; want ErrInvalid containing %q", err, tt.wantErr)
			}
		})
	}
}

// drain reads a pacer to its end and checks that it stays ended.
func drain(t *testing.T, p Pacer) []time.Duration {
	t.Helper()
	var offs []time.Duration
	for {
		off, ok := p.Next()
		if !ok {
			break
		}
		offs = append(offs, off)
	}
	for range 3 {
		if off, ok := p.Next(); ok {
			t.Fatalf("Next after the end = %v, true; want false", off)
		}
	}
	return offs
}

func TestConstantOffsetsExact(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name     string
		rate     float64
		duration time.Duration
		want     []time.Duration
	}{
		{"3 rps: thirds of a second, floored", 3, time.Second, []time.Duration{0, 333333333, 666666666}},
		{"3 rps just over 1s: a fourth request", 3, time.Second + 1, []time.Duration{0, 333333333, 666666666, time.Second}},
		{"1000 rps for 5 ms", 1000, 5 * ms, []time.Duration{0, ms, 2 * ms, 3 * ms, 4 * ms}},
		{"0.5 rps for 5 s", 0.5, 5 * time.Second, []time.Duration{0, 2 * time.Second, 4 * time.Second}},
		{"2.5 rps for 1 s", 2.5, time.Second, []time.Duration{0, 400 * ms, 800 * ms}},
		{"1e9 rps for 3 ns", 1e9, 3, []time.Duration{0, 1, 2}},
		{"2e9 rps: two per nanosecond", 2e9, 2, []time.Duration{0, 0, 1, 1}},
		{"rate so low only the first fits", 1e-3, time.Second, []time.Duration{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := NewConstant(tt.rate, tt.duration)
			if err != nil {
				t.Fatal(err)
			}
			have := drain(t, p)
			if len(have) != len(tt.want) {
				t.Fatalf("offsets = %v, want %v", have, tt.want)
			}
			for i := range have {
				if have[i] != tt.want[i] {
					t.Fatalf("offset[%d] = %v, want %v (all: %v)", i, have[i], tt.want[i], have)
				}
			}
		})
	}
}

// TestConstantNoDrift jumps far into long runs (white-box: sets the request index) and compares
// with floor(i * 1e9 / rate) computed in exact rational arithmetic: exact for integer rates, within
// 1 ns for fractional ones — an accumulating pacer would be off by microseconds here.
func TestConstantNoDrift(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		rate   float64
		i      uint64
		maxErr int64 // ns
	}{
		{"100k rps after 1e6 s", 100_000, 100_000_000_000, 0},
		{"7 rps, index not a multiple", 7, 123_456_789, 0},
		{"999,999 rps after 3e5 s", 999_999, 299_999_700_001, 0},
		{"1e9 rps after 1e6 s", 1e9, 1e15, 0},
		{"1/3 rps", 1.0 / 3, 1_000_000, 1},
		{"33.3 rps after 1e6 s", 33.3, 33_300_000, 1},
		{"12345.678 rps after 2e5 s", 12345.678, 2_469_135_600, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := NewConstant(tt.rate, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			p.i = tt.i
			have, ok := p.Next()
			if !ok {
				t.Fatal("Next = false, want an offset")
			}
			// want = floor(i * 1e9 / rate), with rate taken exactly as the float64 it is.
			q := new(big.Rat).SetFrac(new(big.Int).SetUint64(tt.i), big.NewInt(1))
			q.Mul(q, new(big.Rat).SetInt64(int64(time.Second)))
			q.Quo(q, new(big.Rat).SetFloat64(tt.rate))
			want := new(big.Int).Quo(q.Num(), q.Denom()).Int64()
			if diff := int64(have) - want; diff < -tt.maxErr || diff > tt.maxErr {
				t.Fatalf("offset of request %d = %d ns, want %d ns (± %d)", tt.i, int64(have), want, tt.maxErr)
			}
		})
	}
}

func TestPacerRate(t *testing.T) {
	t.Parallel()
	c, _ := NewConstant(250, 10*time.Second)
	p, _ := NewPoisson(250, 10*time.Second, 1)
	tests := []struct {
		elapsed time.Duration
		want    float64
	}{
		{-time.Nanosecond, 0},
		{0, 250},
		{5 * time.Second, 250},
		{10*time.Second - 1, 250},
		{10 * time.Second, 0},
		{time.Hour, 0},
	}
	for _, tt := range tests {
		if have := c.Rate(tt.elapsed); have != tt.want {
			t.Errorf("Constant.Rate(%v) = %v, want %v", tt.elapsed, have, tt.want)
		}
		if have := p.Rate(tt.elapsed); have != tt.want {
			t.Errorf("Poisson.Rate(%v) = %v, want %v", tt.elapsed, have, tt.want)
		}
	}
}

// TestPoissonRate: over 20 s at 10,000 rps the count is Poisson with mean 200,000 and sd ~447;
// allow 5 sd (~1.1%). The gaps are exponential, so their coefficient of variation is 1; with
// 2e5 gaps its standard error is ~0.003, allow 0.02 (a constant pacer would give 0).
func TestPoissonRate(t *testing.T) {
	t.Parallel()
	const rate, dur = 10_000.0, 20 * time.Second
	p, err := NewPoisson(rate, dur, 2024)
	if err != nil {
		t.Fatal(err)
	}
	offs := drain(t, p)
	if offs[0] != 0 {
		t.Fatalf("first offset = %v, want 0", offs[0])
	}
	var sum, sumSq float64
	for i := 1; i < len(offs); i++ {
		gap := float64(offs[i] - offs[i-1])
		if gap < 0 || offs[i] >= dur {
			t.Fatalf("offset[%d] = %v after %v: want non-decreasing and < %v", i, offs[i], offs[i-1], dur)
		}
		sum += gap
		sumSq += gap * gap
	}
	mean := rate * dur.Seconds()
	if have := float64(len(offs)); math.Abs(have-mean) > 5*math.Sqrt(mean) {
		t.Errorf("requests = %v, want %v ± %.0f", have, mean, 5*math.Sqrt(mean))
	}
	g := float64(len(offs) - 1)
	mu := sum / g
	cv := math.Sqrt(sumSq/g-mu*mu) / mu
	if math.Abs(cv-1) > 0.02 {
		t.Errorf("gap coefficient of variation = %.3f, want 1 (exponential gaps)", cv)
	}
}

func TestPoissonSeeded(t *testing.T) {
	t.Parallel()
	read := func(seed uint64) []time.Duration {
		p, err := NewPoisson(1000, time.Second, seed)
		if err != nil {
			t.Fatal(err)
		}
		return drain(t, p)
	}
	a, b, c := read(7), read(7), read(8)
	if len(a) != len(b) {
		t.Fatalf("same seed: %d vs %d offsets", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed: offset[%d] %v vs %v", i, a[i], b[i])
		}
	}
	same := len(a) == len(c)
	for i := 1; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 7 and 8 gave the same schedule")
	}
}

func BenchmarkPacerNext(b *testing.B) {
	b.Run("constant", func(b *testing.B) {
		p, _ := NewConstant(100_000, math.MaxInt64)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := p.Next(); !ok {
				b.Fatal("pacer ended")
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "offsets/s")
	})
	b.Run("constant-fractional", func(b *testing.B) {
		p, _ := NewConstant(33.3, math.MaxInt64)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := p.Next(); !ok {
				b.Fatal("pacer ended")
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "offsets/s")
	})
	b.Run("poisson", func(b *testing.B) {
		p, _ := NewPoisson(1e9, math.MaxInt64, 1)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := p.Next(); !ok {
				b.Fatal("pacer ended")
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "offsets/s")
	})
}
