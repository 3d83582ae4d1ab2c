package workload_test

import (
	"fmt"
	"math/rand/v2"

	"ratelab/workload"
)

// A YCSB-style skew over 10,000 tenants: how much traffic do the hottest tenants get, and does
// the sampler agree?
func ExampleNewZipf() {
	z, err := workload.NewZipf(10_000, workload.DefaultTheta)
	if err != nil {
		panic(err)
	}
	fmt.Printf("top-1 share:  %.3f\n", workload.TopShare(10_000, workload.DefaultTheta, 1))
	fmt.Printf("top-10 share: %.3f\n", workload.TopShare(10_000, workload.DefaultTheta, 10))

	r := rand.New(rand.NewPCG(1, 2)) // caller-owned generator: same seed, same draws
	const draws = 100_000
	hot := 0
	for range draws {
		if z.Draw(r) < 10 {
			hot++
		}
	}
	fmt.Printf("sampled top-10 share: %.2f\n", float64(hot)/draws)
	// Output:
	// top-1 share:  0.098
	// top-10 share: 0.289
	// sampled top-10 share: 0.29
}
