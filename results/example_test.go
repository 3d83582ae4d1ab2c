package results_test

import (
	"bytes"
	"fmt"
	"time"

	"ratelab/results"
)

// A run writes one row per second as it goes; a reader gets every complete row back.
func ExampleTimeseriesWriter() {
	var file bytes.Buffer
	w, err := results.NewTimeseriesWriter(&file)
	if err != nil {
		panic(err)
	}
	_ = w.Write(results.Interval{TS: 0, Offered: 100, Sent: 100, Allowed: 90, Denied: 10, P50Ms: 0.4, P99Ms: 1.2})
	_ = w.Write(results.Interval{TS: 1, Offered: 100, Sent: 97, Dropped: 3, Allowed: 87, Denied: 10})

	rows, err := results.ReadTimeseries(&file)
	fmt.Println(len(rows), err, rows[1].Dropped)
	// Output: 2 <nil> 3
}

// Latencies go in as durations and come out as milliseconds.
func ExampleHistogram() {
	h := results.NewHistogram()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond / 10) // 0.1 ms .. 100 ms
	}
	fmt.Printf("count %d, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", h.Count(), h.QuantileMs(50), h.QuantileMs(99), h.MaxMs())
	// Output: count 1000, p50 50.02 ms, p99 99.01 ms, max 100.03 ms
}
