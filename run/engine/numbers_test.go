package engine

import (
	"context"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/results"
)

// TestOfferedRateOfAFractionalDuration: a 1.5 s run at 1,000/s offers 1,000/s, not the 750/s a
// rate over whole seconds (2) reads.
func TestOfferedRateOfAFractionalDuration(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "memory", 1000, 1500*time.Millisecond)
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	l := res.Summary.Load
	if l.Offered != 1500 || l.OfferedRPS < 999 || l.OfferedRPS > 1001 || res.Summary.DurationS != 1.5 {
		t.Errorf("offered %d at %.1f/s over %.2f s: want 1500 at 1000/s over 1.5 s", l.Offered, l.OfferedRPS, res.Summary.DurationS)
	}
}

// TestAchievedCountsOnlyAnswersWithinTheWindow: a limiter that serves 500/s while 1,000/s is
// offered and the backlog fits in max_inflight answers half of the requests after the run's
// window: they are late, and the achieved rate is what was served within the window (~500/s),
// not every decision over the window (~1,000/s). The run is limited by the limiter, not the
// generator.
func TestAchievedCountsOnlyAnswersWithinTheWindow(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "noop", 1000, 2*time.Second)
	spec.Load.Concurrency, spec.Load.MaxInflight = 1, 100000
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir(),
		Wrap: func(limiter.Limiter) limiter.Limiter { return slowLimiter{delay: 2 * time.Millisecond} }})
	if err != nil {
		t.Fatal(err)
	}
	l := res.Summary.Load
	// The dispatcher kept its schedule (nothing behind, no lag): the limiter is the limit, named
	// as such, and the generator is not blamed.
	if l.AchievedRPS > 650 || l.Late < 600 || l.Completed != 2000 || l.GeneratorLimited || l.Limit != results.LimitLimiter {
		t.Errorf("load %+v: want ~500/s achieved, the rest late, all 2000 decided, limited by the limiter, not the generator", l)
	}
}

// slowKeys is a key source that takes delay to draw each request: a dispatcher that cannot keep
// its schedule.
type slowKeys struct {
	keySource
	delay time.Duration
}

func (s slowKeys) next() (uint64, int, uint16) {
	time.Sleep(s.delay)
	return s.keySource.next()
}

// TestScheduleLagAgainstAFreshClock: a dispatcher that needs 3 ms per request of a 1,000/s
// schedule falls further behind with every request. Its lag must grow with it (the lag of the
// last requests is over a second) and the requests more than a second late must be dropped as
// behind, not blamed on max_inflight; the summary names the generator as the limit.
func TestScheduleLagAgainstAFreshClock(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "noop", 1000, time.Second)
	s, err := Open(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pacer, keys, err := newSchedule(s.Spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(s)
	var c counts
	total := &Account{hist: results.NewHistogram()}
	d.run(context.Background(), time.Now(), pacer, slowKeys{keys, 3 * time.Millisecond}, func(sec int, st *Account) {
		iv := d.row(sec, st)
		c.offered, c.dropped = c.offered+iv.Offered, c.dropped+iv.Dropped
		c.behind += d.behind[sec].Load()
		total.Add(st)
	})
	total.Add(d.rec.late())
	sum := results.NewSummary("t", 1, time.Now())
	d.summarize(sum, total, time.Second, c)
	if !sum.Load.GeneratorLimited || sum.Load.Limit != results.LimitGenerator {
		t.Errorf("load %+v: a dispatcher that fell behind its schedule is the limit", sum.Load)
	}
	if lag := d.lag.QuantileMs(99); lag < 500 {
		t.Errorf("schedule lag p99 %.1f ms: a dispatcher 2 ms behind per request measured against a stale clock", lag)
	}
	// Requests the dispatcher handed out are in flight until a worker answers: right after it
	// hands out a batch that reaches max_inflight, one or two may still find the bound full.
	if c.behind == 0 || c.dropped-c.behind > c.dropped/100 {
		t.Errorf("dropped %d, of which behind %d: want the drops blamed on the late dispatcher", c.dropped, c.behind)
	}
}

// TestRecorderCountsALostSecond: when workers book a second the ring has come round to before the
// collector harvested the older one, the older second's counts go to the late bucket and the
// second is counted lost; nothing is overwritten silently.
func TestRecorderCountsALostSecond(t *testing.T) {
	t.Parallel()
	rc := newRecorder(1, 20)
	rc.Consume(&Record{Sec: 0, Decision: limiter.Decision{Allowed: true}})
	rc.Consume(&Record{Sec: ringSeconds, Decision: limiter.Decision{Allowed: true}})
	if n := rc.lostSeconds(); n != 1 {
		t.Errorf("%d lost seconds, want 1", n)
	}
	late := rc.late()
	acc := &Account{hist: results.NewHistogram()}
	rc.harvest(ringSeconds, acc)
	if late.allowed != 1 || acc.allowed != 1 {
		t.Errorf("late bucket %d allowed, second %d %d allowed: want the lost second's decision kept in the totals", late.allowed, ringSeconds, acc.allowed)
	}
}
