package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"ratelab/results"
)

// OnProgress hears snapshots a few times a second that only move forward and end where the
// rows end: every offered request counted, elapsed the whole schedule.
func TestRunOnProgress(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "memory", 2000, 2*time.Second)
	var (
		mu    sync.Mutex
		snaps []results.Progress
		rows  int64
	)
	res, err := Run(context.Background(), spec, Options{
		Out: t.TempDir(),
		OnProgress: func(p results.Progress) {
			mu.Lock()
			snaps = append(snaps, p)
			mu.Unlock()
		},
		OnInterval: func(iv results.Interval) { rows += iv.Offered },
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// 2 s at one snapshot per ProgressEvery is 8; a loaded machine may stretch the collector.
	if len(snaps) < 4 {
		t.Fatalf("%d snapshots in a 2 s run, want about %d", len(snaps), 2*time.Second/ProgressEvery)
	}
	for i, p := range snaps {
		if p.Total != 2*time.Second || p.Elapsed < 0 || p.Elapsed > p.Total || p.Sent+p.Dropped > p.Offered || p.Fault != "" {
			t.Errorf("snapshot %d %+v: want 0 <= elapsed <= total 2s, sent + dropped <= offered, no fault", i, p)
		}
		if i > 0 && (p.Elapsed < snaps[i-1].Elapsed || p.Offered < snaps[i-1].Offered) {
			t.Errorf("snapshot %d %+v went back from %+v", i, p, snaps[i-1])
		}
	}
	last := snaps[len(snaps)-1]
	if last.Elapsed != 2*time.Second || last.Offered != rows || rows != res.Summary.Load.Sent+res.Summary.Load.Dropped {
		t.Errorf("last snapshot %+v: want elapsed 2s and offered = the rows' %d = the summary's sent + dropped %d",
			last, rows, res.Summary.Load.Sent+res.Summary.Load.Dropped)
	}
}
