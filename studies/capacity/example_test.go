package capacity_test

import (
	"fmt"

	"ratelab/studies/capacity"
)

// Size a cluster for 100,000 decisions/s over a million Zipf tenants.
func ExampleMakePlan() {
	p, err := capacity.MakePlan(capacity.PlanInput{
		TargetRPS: 100_000, Tenants: 1_000_000, Theta: 0.99, Headroom: 0.3,
		PerPrimaryRPS: capacity.DefaultPerPrimaryRPS, PerPrimarySource: "default",
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d primaries, limited by %s; hottest key %.0f decisions/s\n", p.Central.Primaries, p.Central.Limiting, p.Central.HotKeyRPS)
	// Output: 2 primaries, limited by mean load; hottest key 6497 decisions/s
}

// Fit the Universal Scalability Law to throughput measured at 1..4 primaries.
func ExampleFitUSL() {
	u, err := capacity.FitUSL([]capacity.USLPoint{{N: 1, X: 10_000}, {N: 2, X: 17_544}, {N: 3, X: 22_727}, {N: 4, X: 25_974}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("lambda %.0f sigma %.2f kappa %.3f peak at N* = %.1f\n", u.Lambda, u.Sigma, u.Kappa, *u.PeakN)
	// Output: lambda 10000 sigma 0.10 kappa 0.020 peak at N* = 6.7
}
