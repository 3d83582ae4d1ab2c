package attack

import (
	"context"
	"testing"
	"time"

	"ratelab/workload/trace"
)

// One tenant's requests 0, 1, 2: 1 waits for 0; 1 gives up while waiting (its context ends),
// so when 0 is answered the turn skips 1 and goes to 2.
func TestSequencerOrderAndSkip(t *testing.T) {
	t.Parallel()
	p := &plan{recs: []trace.Request{{Tenant: 0}, {Tenant: 0}, {Tenant: 0}, {Tenant: 1}}, nextSame: []int32{1, 2, -1, -1}, first: []int32{0, 3}}
	s := newSequencer(p)
	ctx := context.Background()
	if err := s.wait(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.wait(ctx, 3, 1); err != nil { // another tenant never waits for tenant 0
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error)
	go func() { gaveUp <- s.wait(cctx, 1, 0) }()
	got2 := make(chan error)
	go func() { got2 <- s.wait(ctx, 2, 0) }()
	select {
	case err := <-got2:
		t.Fatalf("request 2 went before 0 and 1 were done (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("request 1's wait ended without error after its context was cancelled")
	}
	s.done(0, 0)
	select {
	case err := <-got2:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request 2 still waits after 0 was answered and 1 gave up")
	}
}
