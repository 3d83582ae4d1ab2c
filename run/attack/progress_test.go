package attack_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/attack"
)

// OnProgress hears snapshots a few times a second while the attack runs, moving forward, never
// past the schedule, and never counting more answers than requests planned.
func TestAttackOnProgress(t *testing.T) {
	t.Parallel()
	url := startGateway(t, limiter.Noop{})
	var (
		mu    sync.Mutex
		snaps []results.Progress
	)
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 200, Duration: 2 * time.Second, Tenants: 5, Seed: 3,
		Policy: limiter.BucketPolicy{Rate: 100, Burst: 100}, Out: t.TempDir(), Timeout: 20 * time.Second,
		OnProgress: func(p results.Progress) {
			mu.Lock()
			snaps = append(snaps, p)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(snaps) < 4 {
		t.Fatalf("%d snapshots in a 2 s attack, want several a second", len(snaps))
	}
	planned := res.Summary.Load.Sent + res.Summary.Load.Dropped
	for i, p := range snaps {
		if p.Total != 2*time.Second || p.Elapsed < 0 || p.Elapsed > p.Total || p.Offered > planned || p.Sent > p.Offered {
			t.Errorf("snapshot %d %+v: want elapsed within the 2 s schedule, answered <= offered <= %d planned", i, p, planned)
		}
		if i > 0 && (p.Elapsed < snaps[i-1].Elapsed || p.Offered < snaps[i-1].Offered || p.Sent < snaps[i-1].Sent) {
			t.Errorf("snapshot %d %+v went back from %+v", i, p, snaps[i-1])
		}
	}
	if last := snaps[len(snaps)-1]; last.Offered == 0 || last.Sent == 0 {
		t.Errorf("last snapshot %+v: the attack sent and heard nothing", last)
	}
}
