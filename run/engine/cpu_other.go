//go:build !unix

package engine

// selfCPUSeconds is not measured here.
func selfCPUSeconds() float64 { return 0 }
