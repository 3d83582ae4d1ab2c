package workload

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// knee is the ramp the tests share: up from 200/s to 5000/s over 3 s, a steep ramp to 20000/s
// over 2 s, a hold of 1.5 s, a step down to 1000/s, a ramp down to 0 over 1 s, 1 s at 0 and a
// ramp back up to 3000/s over 1.5 s.
var knee = []Stage{
	{To: 5000, Over: 3 * time.Second},
	{To: 20000, Over: 2 * time.Second},
	{To: 20000, Over: 1500 * time.Millisecond},
	{To: 1000, Over: 0},
	{To: 0, Over: time.Second},
	{To: 0, Over: time.Second},
	{To: 3000, Over: 1500 * time.Millisecond},
}

func kneeProfile(t testing.TB) *Profile {
	t.Helper()
	p, err := NewProfile(200, knee, StagesDuration(knee))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// perSecond counts offsets by whole second, checking they never decrease and stay in [0, d).
func perSecond(t *testing.T, offs []time.Duration, d time.Duration) []int {
	t.Helper()
	counts := make([]int, int((d+time.Second-1)/time.Second))
	for i, off := range offs {
		if off < 0 || off >= d {
			t.Fatalf("offset %d = %v outside [0, %v)", i, off, d)
		}
		if i > 0 && off < offs[i-1] {
			t.Fatalf("offset %d = %v before offset %d = %v: intended starts must never decrease", i, off, i-1, offs[i-1])
		}
		counts[off/time.Second]++
	}
	return counts
}

func TestRampConstantFollowsTheIntegral(t *testing.T) {
	t.Parallel()
	p := kneeProfile(t)
	offs := drain(t, NewRamp(p))
	counts := perSecond(t, offs, p.Duration())
	for k, have := range counts {
		from, to := time.Duration(k)*time.Second, time.Duration(k+1)*time.Second
		want := p.Arrivals(to) - p.Arrivals(from)
		if math.Abs(float64(have)-want) > 1 {
			t.Errorf("second %d: %d requests, want the rate's integral %.3f ± 1", k, have, want)
		}
	}
	if want := math.Ceil(p.Total()); float64(len(offs)) != want {
		t.Errorf("%d requests in all, want ceil(Λ(end)) = %v", len(offs), want)
	}
	// Nothing is scheduled while the rate is 0 (7.5 s to 8.5 s), and the requests around it
	// follow the ramps' shape: request n at Λ⁻¹(n) exactly, to the nanosecond.
	for n, off := range offs {
		if off > 7500*time.Millisecond && off < 8500*time.Millisecond {
			t.Errorf("request %d at %v, inside the second at rate 0", n, off)
		}
		if n%997 == 0 {
			if got := p.Arrivals(off); got > float64(n)+1e-6 || p.Arrivals(off+time.Nanosecond) < float64(n)-1e-6 {
				t.Errorf("request %d at %v where Λ = %.6f: want the instant Λ passes %d", n, off, got, n)
			}
		}
	}
}

// TestRampHoldIsTheConstantPacer: a profile that holds one integer rate gives the constant
// pacer's schedule, to the nanosecond of rounding.
func TestRampHoldIsTheConstantPacer(t *testing.T) {
	t.Parallel()
	for _, rate := range []float64{1, 999, 1000, 7919, 100000} {
		p, err := NewProfile(rate, nil, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewConstant(rate, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		have, want := drain(t, NewRamp(p)), drain(t, c)
		if len(have) != len(want) {
			t.Fatalf("rate %v: %d requests, the constant pacer %d", rate, len(have), len(want))
		}
		for i := range have {
			if d := have[i] - want[i]; d < -time.Nanosecond || d > time.Nanosecond {
				t.Fatalf("rate %v request %d at %v, the constant pacer's at %v", rate, i, have[i], want[i])
			}
		}
	}
}

// TestRampPoissonFollowsTheIntegral: each second's count of a Poisson ramp is Poisson with the
// rate's integral over it as mean; 5 standard deviations (+1 for the request at 0) bound it with
// a false-failure chance below 1e-6 per second, for several seeds. Each seed gives one schedule.
func TestRampPoissonFollowsTheIntegral(t *testing.T) {
	t.Parallel()
	p := kneeProfile(t)
	for seed := uint64(1); seed <= 4; seed++ {
		offs := drain(t, NewRampPoisson(p, seed))
		counts := perSecond(t, offs, p.Duration())
		var sum, want float64
		for k, have := range counts {
			mean := p.Arrivals(time.Duration(k+1)*time.Second) - p.Arrivals(time.Duration(k)*time.Second)
			if math.Abs(float64(have)-mean) > 5*math.Sqrt(mean)+1 {
				t.Errorf("seed %d second %d: %d requests, want %.1f ± 5σ (%.1f)", seed, k, have, mean, 5*math.Sqrt(mean))
			}
			sum, want = sum+float64(have), want+mean
		}
		if math.Abs(sum-want) > 5*math.Sqrt(want)+1 {
			t.Errorf("seed %d: %v requests in all, want %.0f ± 5σ", seed, sum, want)
		}
		again := drain(t, NewRampPoisson(p, seed))
		if len(again) != len(offs) || again[len(again)/2] != offs[len(offs)/2] {
			t.Errorf("seed %d: two schedules differ; a seed must fix the schedule", seed)
		}
	}
	a, b := drain(t, NewRampPoisson(p, 1)), drain(t, NewRampPoisson(p, 2))
	if len(a) > 10 && len(b) > 10 && a[10] == b[10] {
		t.Errorf("seeds 1 and 2 give the same schedule")
	}
}

func TestProfileCutsAndHolds(t *testing.T) {
	t.Parallel()
	stages := []Stage{{To: 1000, Over: 2 * time.Second}}
	cut, err := NewProfile(0, stages, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Cut at 1 s, half way up a slope of 500/s²: Λ(1 s) = 500·1²/2 = 250.
	if got := cut.Total(); got != 250 {
		t.Errorf("cut total %v, want 250", got)
	}
	long, err := NewProfile(0, stages, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := long.Total(); got != 1000+2000 {
		t.Errorf("extended total %v, want 1000 up the ramp + 2 s held at 1000/s", got)
	}
	tests := []struct {
		at   time.Duration
		want float64
	}{{-1, 0}, {0, 0}, {time.Second, 500}, {1500 * time.Millisecond, 750}, {3 * time.Second, 1000}, {4 * time.Second, 0}}
	for _, tt := range tests {
		if have := long.Rate(tt.at); have != tt.want {
			t.Errorf("Rate(%v) = %v, want %v", tt.at, have, tt.want)
		}
	}
	step, err := NewProfile(10, []Stage{{To: 500, Over: 0}, {To: 500, Over: time.Second}}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if have := step.Rate(0); have != 500 {
		t.Errorf("Rate(0) after a step = %v, want 500", have)
	}
}

func TestProfileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		start    float64
		stages   []Stage
		duration time.Duration
		want     string
	}{
		{"negative start", -1, nil, time.Second, "start rate -1"},
		{"NaN start", math.NaN(), nil, time.Second, "start rate NaN"},
		{"start too high", 2e7, nil, time.Second, "start rate 2e+07"},
		{"negative stage", 0, []Stage{{To: 10, Over: time.Second}, {To: -1, Over: time.Second}}, time.Second, "stage 1 rate -1"},
		{"infinite stage", 0, []Stage{{To: math.Inf(1), Over: time.Second}}, time.Second, "stage 0 rate +Inf"},
		{"negative length", 0, []Stage{{To: 10, Over: -time.Second}}, time.Second, "stage 0 length -1s"},
		{"no duration", 10, nil, 0, "duration 0s"},
	}
	for _, tt := range tests {
		_, err := NewProfile(tt.start, tt.stages, tt.duration)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want ErrInvalid containing %q", tt.name, err, tt.want)
		}
	}
}

func TestRampAllocatesNothing(t *testing.T) {
	p := kneeProfile(t)
	for _, r := range []*Ramp{NewRamp(p), NewRampPoisson(p, 1)} {
		if a := testing.AllocsPerRun(10000, func() { r.Next() }); a != 0 {
			t.Errorf("Next allocates %v times per call, want 0", a)
		}
	}
}

func BenchmarkRampNext(b *testing.B) {
	p, err := NewProfile(0, []Stage{{To: MaxRampRate, Over: time.Hour}}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		r    *Ramp
	}{{"constant", NewRamp(p)}, {"poisson", NewRampPoisson(p, 1)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				bc.r.Next()
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "schedules/s")
		})
	}
}
