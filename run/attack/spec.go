package attack

import (
	"fmt"
	"time"

	"ratelab/scenarios"
	"ratelab/workload"
	"ratelab/workload/trace"
)

// TraceFromSpec generates the requests a scenario offers — its rate, duration, pacer, tenant
// distribution, endpoint mix and seed — as a trace: the same requests `ratelab run` draws for
// the spec, to replay over HTTP or to keep as a file. Only those fields of spec are read.
func TraceFromSpec(spec *scenarios.Spec) (*trace.Trace, error) {
	n := uint64(spec.Tenants.Count)
	var (
		keys workload.KeyDist
		err  error
	)
	switch spec.Tenants.Distribution {
	case "uniform":
		keys, err = workload.NewUniform(n)
	case "hotspot":
		keys, err = workload.NewHotspot(n, uint64(spec.Tenants.HotKeys), spec.Tenants.HotShare)
	case "", "zipf":
		theta := spec.Tenants.Theta
		if theta == 0 {
			theta = workload.DefaultTheta
		}
		keys, err = workload.NewZipf(n, theta)
	default:
		return nil, fmt.Errorf("%w: tenants.distribution %q: want zipf, uniform or hotspot", ErrInvalid, spec.Tenants.Distribution)
	}
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	names := make([]string, len(spec.Endpoints))
	weights := make([]float64, len(spec.Endpoints))
	for i, e := range spec.Endpoints {
		names[i], weights[i] = e.Name, e.Weight
	}
	if len(names) == 0 {
		names, weights = []string{DefaultEndpoint}, []float64{1}
	}
	mix, err := workload.NewMix(names, weights)
	if err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	return trace.Generate(trace.GenOptions{
		Rate: spec.Load.Rate, Duration: time.Duration(spec.Duration), Pacer: spec.Load.Pacer, Seed: spec.Seed,
		Keys: keys, Mix: mix, Endpoints: names,
	})
}
