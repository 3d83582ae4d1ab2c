package trace_test

import (
	"testing"
	"time"

	"ratelab/workload"
	"ratelab/workload/trace"
)

// A generated trace with a Profile holds the Ramp's schedule (at the file's microsecond
// resolution), for both pacers: what an attack needs to follow load stages.
func TestGenerateFollowsAProfile(t *testing.T) {
	t.Parallel()
	prof, err := workload.NewProfile(0, []workload.Stage{{To: 4000, Over: 2 * time.Second}, {To: 4000, Over: time.Second}}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := workload.NewZipf(100, 0.99)
	for _, pacer := range []string{"constant", "poisson"} {
		tr, err := trace.Generate(trace.GenOptions{Profile: prof, Pacer: pacer, Seed: 3, Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		r := workload.NewRamp(prof)
		if pacer == "poisson" {
			r = workload.NewRampPoisson(prof, 3)
		}
		n := 0
		for {
			off, ok := r.Next()
			if !ok {
				break
			}
			if n >= len(tr.Requests) || tr.Requests[n].At != off.Truncate(time.Microsecond) {
				t.Fatalf("%s: request %d differs from the ramp's offset %v", pacer, n, off)
			}
			n++
		}
		if n != len(tr.Requests) {
			t.Errorf("%s: %d requests, the ramp scheduled %d", pacer, len(tr.Requests), n)
		}
	}
	if _, err := trace.Generate(trace.GenOptions{Profile: prof, Keys: keys, MaxRequests: 1000}); err == nil {
		t.Error("a profile of 8000 requests passed MaxRecords 1000")
	}
}
