package live_test

import (
	"context"
	"fmt"
	"time"

	"ratelab/report/live"
	"ratelab/results"
)

// A run's live metrics: start them (here without a server or a push; a caller adds
// live.WithListen("127.0.0.1:9464") or live.WithPush(url)), hand the driver's hooks through
// them, and Finish with the summary, which sets every counter to its total.
func ExampleStart() {
	run, err := live.Start("smoke", "smoke-20261207-101500", live.WithGrace(0))
	if err != nil {
		panic(err)
	}
	onInterval := run.TeeInterval(nil) // the driver's Options.OnInterval, chained to any other hook
	onInterval(results.Interval{TS: 0, Offered: 100, Sent: 100, Allowed: 90, Denied: 9})
	h := results.NewHistogram()
	h.Record(2 * time.Millisecond)
	run.ObserveHistogram(h) // the second's histogram of served requests, beside its row

	sum := results.NewSummary("smoke", 1, time.Now())
	sum.Load.Offered, sum.Load.Sent, sum.Load.Completed = 100, 100, 100
	sum.Outcomes.Allowed, sum.Outcomes.Denied = 90, 10 // one decision came after its row
	if err := run.Finish(context.Background(), sum); err != nil {
		panic(err)
	}
	fams, _ := run.Registry().Gather()
	for _, f := range fams {
		if f.GetName() == live.MetricDecisions {
			for _, m := range f.GetMetric() {
				if v := m.GetCounter().GetValue(); v > 0 {
					fmt.Println(m.GetLabel()[0].GetName(), m.GetLabel()[0].GetValue(), v)
				}
			}
		}
	}
	// Output:
	// outcome allowed 90
	// outcome denied 10
}
