package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ratelab/results"
	"ratelab/workload"
)

// Two parts given one StartAt start their schedules at that instant: their summaries'
// started_at, their first rows' time_utc and their latency logs' start are StartAt exactly,
// though each set up on its own.
func TestStartAtAlignsParts(t *testing.T) {
	root := t.TempDir()
	at := time.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
	var wg sync.WaitGroup
	res := make([]*Result, 2)
	errs := make([]error, 2)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := partSpec(t)
			res[i], errs[i] = Run(context.Background(), spec, Options{
				Out: filepath.Join(root, "part-"+string(rune('0'+i))), Part: workload.Part{Index: i, Count: 2}, StartAt: at})
		}()
	}
	wg.Wait()
	for i, r := range res {
		if errs[i] != nil {
			t.Fatalf("part %d: %v", i, errs[i])
		}
		if !r.Summary.StartedAt.Equal(at) {
			t.Errorf("part %d: started_at %s, want --start-at %s", i, r.Summary.StartedAt, at)
		}
		if !strings.Contains(r.Summary.Load.Note, "--start-at") {
			t.Errorf("part %d: note does not say the run waited: %q", i, r.Summary.Load.Note)
		}
		_, rows := readRun(t, r.Dir)
		if len(rows) == 0 || !rows[0].Time.Equal(results.SecondTime(at, rows[0].TS)) {
			t.Fatalf("part %d: rows %v, want the first at %s", i, rows, results.SecondTime(at, 0))
		}
		f, err := os.Open(filepath.Join(r.Dir, results.LatencyLogFile))
		if err != nil {
			t.Fatal(err)
		}
		l, err := results.ReadLatencyLog(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d := l.Start.Sub(at); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("part %d: latency.hlog starts at %s, want %s", i, l.Start, at)
		}
	}
}

func TestStartAtPastIsRefused(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), partSpec(t), Options{Out: t.TempDir(), StartAt: time.Now().Add(-5 * time.Second)})
	if !errors.Is(err, ErrStartPast) || !strings.Contains(err.Error(), "--start-at") {
		t.Fatalf("StartAt 5s ago: err %v, want ErrStartPast naming --start-at", err)
	}
}

func TestWaitStart(t *testing.T) {
	t.Parallel()
	nolog := func(string, ...any) {}
	if _, err := waitStart(context.Background(), time.Now().Add(-500*time.Millisecond), nolog); err != nil {
		t.Errorf("half a second late: %v, want a start (within MaxStartLate)", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := waitStart(ctx, time.Now().Add(time.Hour), nolog); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting: %v, want context.Canceled", err)
	}
	at := time.Now().Add(50 * time.Millisecond).Truncate(time.Millisecond)
	var said string
	base, err := waitStart(context.Background(), at, func(f string, a ...any) { said = fmt.Sprintf(f, a...) })
	if err != nil || !base.Equal(at) || time.Now().Before(at) {
		t.Errorf("waitStart(%s) = %s, %v at %s: want the instant itself, returned no earlier", at, base, err, time.Now())
	}
	if !strings.Contains(said, "waiting") {
		t.Errorf("waitStart logged %q, want that it waits", said)
	}
}
