package simulate

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/results"
)

// before and after are two readings of a node 10,000 script calls and 0.3 s of main-thread CPU
// apart, its EVALSHA p50 and p99 at 20 and 100 µs by the second.
var (
	before = cluster.NodeStats{Calls: 1010, Usec: 20500, CPUSeconds: 3, TotalCPUSeconds: 19, P50Us: 10, P99Us: 50}
	after  = cluster.NodeStats{Calls: 11010, Usec: 220500, CPUSeconds: 3.3, TotalCPUSeconds: 19.4, P50Us: 20, P99Us: 100}
)

func TestCalibrate(t *testing.T) {
	t.Parallel()
	h := results.NewHistogram()
	for i := range 1000 {
		h.Record(time.Duration(400+i) * time.Microsecond) // 0.4..1.4 ms
	}
	c, err := Calibrate(before, after, h)
	if err != nil {
		t.Fatal(err)
	}
	// 0.3 s of main-thread CPU over 10,000 calls.
	if math.Abs(c.Service.MeanUs-30) > 1e-6 {
		t.Errorf("service mean %v µs, want 0.3 s / 10,000 calls = 30", c.Service.MeanUs)
	}
	// sigma = ln(100/20)/2.326; cv = sqrt(exp(sigma^2)-1).
	sig := math.Log(5) / 2.326
	if want := math.Sqrt(math.Expm1(sig * sig)); math.Abs(c.Service.CV-want) > 1e-9 {
		t.Errorf("cv %v, want %v", c.Service.CV, want)
	}
	if err := c.Client.Validate(); err != nil {
		t.Fatal(err)
	}
	if med := c.Client.median(); math.Abs(med-(0.9-0.03)) > 0.02 {
		t.Errorf("client median %.3f ms, want the run's 0.9 ms minus 0.03 ms of service", med)
	}
	if _, err := Calibrate(before, before, h); err == nil {
		t.Error("no calls between snapshots accepted")
	}
}

func TestEmpiricalSample(t *testing.T) {
	t.Parallel()
	e := Empirical{{0, 1}, {0.5, 2}, {1, 10}}
	r := rand.New(rand.NewPCG(1, 1))
	below := 0
	const n = 100_000
	for range n {
		v := e.sample(r) * 1e3
		if v < 1 || v > 10 {
			t.Fatalf("sample %v ms outside [1, 10]", v)
		}
		if v <= 2 {
			below++
		}
	}
	if got := float64(below) / n; math.Abs(got-0.5) > 0.01 {
		t.Errorf("P(X <= 2 ms) = %.3f, want 0.5", got)
	}
	if err := (Empirical{{0, 2}, {1, 1}}).Validate(); err == nil {
		t.Error("decreasing quantiles accepted")
	}
}
