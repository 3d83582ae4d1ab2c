package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/run/check"
	"ratelab/scenarios"
)

// recordSession is an in-process session of the memory twin (no Redis) and its driver, for the
// record stream's tests.
func recordSession(tb testing.TB) (*Session, *driver) {
	tb.Helper()
	s, err := scenarios.Parse("t", []byte("name: t\nduration: 2s\nload: {rate: 1000}\ntenants: {count: 1000}\nendpoints: [{name: a, weight: 1}, {name: b, weight: 1}]\npolicy: {rate: 100, burst: 100}\nlimiter: {kind: memory}\n"))
	if err != nil {
		tb.Fatal(err)
	}
	sess, err := Open(context.Background(), s, Options{Out: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sess.Close() })
	d := newDriver(sess)
	d.base = time.Now()
	sess.Start(d.base)
	return sess, d
}

// decide is one worker decision without the channels: the limiter, then every consumer.
func decide(d *driver, r *Record, lim limiter.Limiter, i int) {
	r.Key = i % 2000
	r.Sec = 0
	r.AtMs = d.base.UnixMilli() + int64(i%1000)
	r.Cost = 1
	r.Decision, r.Err = lim.Allow(context.Background(), limiter.Request{
		Tenant: d.s.Tenants[r.Key/2], Endpoint: d.s.Endpoints[r.Key%2], Cost: 1, Now: d.base.Add(time.Duration(i%1000) * time.Millisecond),
	})
	r.Latency = time.Millisecond
	Classify(r) // as worker.finish does
	d.consume(r)
}

// TestRecordStreamAllocatesNothing: after a key's first decision, a decision and its record's
// trip through every consumer allocate nothing.
func TestRecordStreamAllocatesNothing(t *testing.T) {
	s, d := recordSession(t)
	r := &Record{}
	lim := s.gateways[0]
	for i := range 4000 { // every key seen once: the checker's first look may allocate
		decide(d, r, lim, i)
	}
	i := 0
	if n := testing.AllocsPerRun(2000, func() { decide(d, r, lim, i); i++ }); n != 0 {
		t.Errorf("%.2f allocations per decision, want 0", n)
	}
}

// BenchmarkRecordStream is the cost of one in-process decision of the memory twin and its
// record's consumers (judge, tally, recorder): the engine's own cost per decision.
func BenchmarkRecordStream(b *testing.B) {
	s, d := recordSession(b)
	r := &Record{}
	lim := s.gateways[0]
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		decide(d, r, lim, i)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// countingConsumer counts the records it hears and the overspend verdicts among them.
type countingConsumer struct{ records, overspend atomic.Int64 }

func (c *countingConsumer) Consume(r *Record) {
	c.records.Add(1)
	if r.Verdict == check.Overspend {
		c.overspend.Add(1)
	}
}

// TestOptionsConsumersHearEveryDecision: a caller's consumer hears one record per decision,
// after the judge (it sees the verdicts the summary counts).
func TestOptionsConsumersHearEveryDecision(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "noop", 1000, 2*time.Second) // noop: every request allowed, most overspend
	c := &countingConsumer{}
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), Consumers: []Consumer{c}})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary
	if c.records.Load() != sum.Load.Completed || c.overspend.Load() != sum.Overspend.Requests || sum.Overspend.Requests == 0 {
		t.Errorf("consumer heard %d records, %d overspent; summary: %d decisions, %d overspent", c.records.Load(), c.overspend.Load(), sum.Load.Completed, sum.Overspend.Requests)
	}
}
