package results_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ratelab/results"
)

// A run creates its series before the load, starts it when the load starts, writes each
// second's row with the second's histogram as it goes and ends with its totals: timeseries.csv
// gets time_utc, latency.hlog an HdrHistogram interval per second at that instant (start
// timestamp, length in s, max in s, the histogram).
func ExampleSeriesWriter() {
	dir, _ := os.MkdirTemp("", "series-example-")
	defer os.RemoveAll(dir)
	sw, err := results.CreateSeries(dir)
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 12, 7, 9, 30, 0, 250*int(time.Millisecond), time.UTC)
	_ = sw.Start(start)
	for sec := range 2 {
		h := results.NewHistogram()
		for i := range 100 {
			h.Record(time.Duration(i+1) * 10 * time.Microsecond)
		}
		_ = sw.Write(results.Interval{TS: float64(sec), Offered: 101, Sent: 100, Dropped: 1, Allowed: 100}, h)
	}
	_ = sw.End(results.RequestCounts{Offered: 202, Served: 200, Dropped: 2})
	_ = sw.Close()

	f, _ := os.Open(filepath.Join(dir, results.TimeseriesFile))
	rows, _ := results.ReadTimeseries(f)
	f.Close()
	fmt.Println(rows[1].Time.Format(results.TimeLayout))
	log, _ := os.ReadFile(filepath.Join(dir, results.LatencyLogFile))
	for _, line := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(line, "#[StartTime") || strings.HasPrefix(line, "#[t_s=1") || strings.HasPrefix(line, "1796") {
			fmt.Println(line[:min(len(line), 58)])
		}
	}
	// Output:
	// 2026-12-07T09:30:01.250Z
	// #[StartTime: 1796635800.250 (seconds since epoch), 2026-12
	// 1796635800.250000,1.000000,0.001000,HISTFAAAACp42pJpmSzMwM
	// #[t_s=1 offered=101 served=100 dropped=1 failed=0]
	// 1796635801.250000,1.000000,0.001000,HISTFAAAACp42pJpmSzMwM
}
