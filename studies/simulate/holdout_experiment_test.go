//go:build experiment

package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// The model against runs it was not calibrated on, an experiment (`make validate-model`, the
// `experiment` build tag: a few minutes that saturate the machine's cores): HoldoutLocal
// calibrates on one primary, then judges the model's node shares, p99 at three loads, knees
// and busiest primary against new runs, each beside a naive baseline from the calibration
// runs. The table goes to stdout and, when RATELAB_VALIDATE_JSON names a file, the result as
// JSON there. It fails when any quantity is not validated: within tolerance and nearer than
// the baseline. Run it without -race: under it the runs would measure the race detector.
func TestModelPredictsHeldOutRuns(t *testing.T) {
	spec, err := scenarios.Parse("simulate-validate", []byte(ValidateScenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	h, err := HoldoutLocal(ctx, spec, HoldoutOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Print(h.Text())
	if path := os.Getenv("RATELAB_VALIDATE_JSON"); path != "" {
		b, err := json.MarshalIndent(h, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := results.WriteFileAtomic(path, append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range h.Checks {
		if !c.Validated {
			t.Errorf("%s: %s", c.Quantity, c.Why)
		}
	}
}
