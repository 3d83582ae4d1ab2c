//go:build !unix

package simulate

// processCPU is not measured here: client CPU per decision is then reported as 0.
func processCPU() float64 { return 0 }
