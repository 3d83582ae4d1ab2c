package simulate_test

import (
	"fmt"
	"time"

	"ratelab/studies/simulate"
)

// Four primaries at 200,000 decisions/s, 5 µs per script call: each is about a quarter busy,
// the busiest more (Zipf tenants hash unevenly).
func ExampleSimulate() {
	res, err := simulate.Simulate(simulate.Config{
		Primaries: 4, Rate: 200_000, Tenants: 10_000, Theta: 0.99,
		Service: simulate.Service{Kind: simulate.Lognormal, MeanUs: 5, CV: 0.5},
		Client:  simulate.ConstantMs(0.2), Horizon: time.Second, MaxRequests: 200_000,
	})
	if err != nil {
		panic(err)
	}
	mean := 0.0
	for _, s := range res.Primaries {
		mean += s.Utilisation / 4
	}
	fmt.Printf("mean utilisation %.2f, throughput %.0fk/s\n", mean, res.ThroughputRPS/1000)
	// Output: mean utilisation 0.25, throughput 200k/s
}
