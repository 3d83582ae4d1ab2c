package attack_test

import (
	"context"
	"fmt"
	"os"

	"ratelab/run/attack"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// A via: http scenario: the scenario's limiter behind ratelab's gateway on a loopback port,
// driven by vegeta; the run directory is the engine's, plus vegeta's results.bin.
func ExampleRunScenario() {
	spec, err := scenarios.Parse("example", []byte(`
name: example
duration: 1s
via: http
load: {rate: 200, concurrency: 4, max_inflight: 64}
tenants: {count: 10}
policy: {rate: 10, burst: 5}
limiter: {kind: memory}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "ratelab-example-")
	defer os.RemoveAll(dir)
	res, err := attack.RunScenario(context.Background(), spec, engine.Options{Out: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary
	fmt.Println(s.Scenario, "via", s.Environment.Via, "decisions", s.Load.Completed, "denied", s.Outcomes.Denied > 0)
	// Output: example via http decisions 200 denied true
}
