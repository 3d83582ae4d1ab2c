package progress_test

import (
	"os"
	"time"

	"ratelab/report/progress"
	"ratelab/results"
)

// A run's progress in a log (not a terminal): one plain line per finished second.
func Example() {
	d := progress.New(os.Stdout, 2*time.Second, progress.WithTerminal(false))
	d.Progress(results.Progress{Elapsed: 400 * time.Millisecond, Total: 2 * time.Second, Fault: "pause"})
	d.Interval(results.Interval{TS: 0, Offered: 1000, Allowed: 900, FailedOpen: 100, P99Ms: 5.2})
	d.Interval(results.Interval{TS: 1, Offered: 1000, Allowed: 1000, Overspend: 4, P99Ms: 0.8})
	d.Close()
	// Output:
	//   1.0s/2.0s  offered 1000/s achieved 1000/s  p99 5.20 ms  errors 0  overspend 0  failed-open 100  fault pause
	//   2.0s/2.0s  offered 1000/s achieved 1000/s  p99 0.80 ms  errors 0  overspend 4  failed-open 100  fault pause
}
