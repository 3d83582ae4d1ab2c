package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// answerLog records what AllowAsync's callbacks hear, by request id.
type answerLog struct {
	mu   sync.Mutex
	got  map[int][]answered
	each chan int // an id per answer
}

type answered struct {
	d   limiter.Decision
	err error
}

func newAnswerLog() *answerLog {
	return &answerLog{got: map[int][]answered{}, each: make(chan int, 1024)}
}

// to returns the callback of request id.
func (a *answerLog) to(id int) limiter.Deferred { return answerTo{a, id} }

type answerTo struct {
	a  *answerLog
	id int
}

func (x answerTo) Decided(d limiter.Decision, err error) {
	x.a.mu.Lock()
	x.a.got[x.id] = append(x.a.got[x.id], answered{d, err})
	x.a.mu.Unlock()
	x.a.each <- x.id
}

// wait waits for n answers.
func (a *answerLog) wait(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-a.each:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d answers after 10 s", i, n)
		}
	}
}

// only returns request id's single answer, failing if it had none or several.
func (a *answerLog) only(t *testing.T, id int) answered {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.got[id]); n != 1 {
		t.Fatalf("request %d answered %d times, want exactly once: %+v", id, n, a.got[id])
	}
	return a.got[id][0]
}

// failScripter holds each script call until the test releases it, then fails it without
// calling Redis, as a timed-out or refused call does.
type failScripter struct {
	redis.Scripter
	entered chan struct{}
	release chan struct{}
}

var errInjected = errors.New("injected failure")

func (s *failScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	s.entered <- struct{}{}
	<-s.release
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(errInjected)
	return cmd
}

// TestLeaseAsyncParksOnTheFetch: while a fetch is held in flight, every request on its key is
// parked (none holds its caller); when it answers, each is decided once, in the order parked:
// the fetch's owner first (Central), then the others from the lease it brought, and the one the
// lease could not pay starts the next fetch and is its Central decision. A request the lease
// pays is answered at once and its callback never runs.
func TestLeaseAsyncParksOnTheFetch(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	s := newGateScripter(c)
	l, parked, r, log := parkingLease(t, newLease(t, s, limiter.BucketPolicy{Rate: 100, Burst: 100}, 10))
	const n = 12 // the owner, 9 paid by its lease of 10, 2 after it: one fetches again
	for id := range n {
		d, isParked, err := l.AllowAsync(context.Background(), r, log.to(id))
		if !isParked || err != nil || d != (limiter.Decision{}) {
			t.Fatalf("request %d: %+v, parked %v, %v; want parked while the fetch is in flight", id, d, isParked, err)
		}
		if id == 0 {
			<-s.entered // the owner's fetch is in flight
		} else {
			<-parked
		}
	}
	close(s.release)
	log.wait(t, n)
	l.WaitRefreshes()
	for id := range n {
		a := log.only(t, id)
		want := limiter.Source(limiter.Lease)
		if id == 0 || id == 10 {
			want = limiter.Central
		}
		if a.err != nil || !a.d.Allowed || a.d.Source != want || !a.d.At.Equal(r.Now) {
			t.Errorf("request %d: %+v, %v; want allowed, source %v, at the request's time", id, a.d, a.err, want)
		}
	}
	if calls := l.CentralCalls(); calls != 2 {
		t.Errorf("CentralCalls %d, want 2 (one per lease of 10)", calls)
	}
	if w := l.Waited(); w != n {
		t.Errorf("Waited %d, want %d", w, n)
	}
	d, isParked, err := l.AllowAsync(context.Background(), r, log.to(n))
	if isParked || err != nil || !d.Allowed || d.Source != limiter.Lease {
		t.Fatalf("a request the lease pays: %+v, parked %v, %v; want allowed at once from the lease", d, isParked, err)
	}
	select {
	case id := <-log.each:
		t.Fatalf("request %d's callback ran; want none for an answer given at once", id)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestLeaseAsyncFailedFetch: a fetch that fails answers its owner with its error. A request
// parked on it for at least the lease timeout gets the same error, with no call of its own; one
// parked for less tries again, with a fetch of its own, which fails too here.
func TestLeaseAsyncFailedFetch(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 100, Burst: 100}
	for _, tt := range []struct {
		name      string
		timeout   time.Duration
		hold      time.Duration
		wantCalls int64
	}{
		{"parked past the timeout", 50 * time.Millisecond, 150 * time.Millisecond, 1},
		{"parked within the timeout", 5 * time.Second, 0, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &failScripter{Scripter: c, entered: make(chan struct{}, 16), release: make(chan struct{})}
			l, err := limiter.NewLeaseLimiter(s, p, 10, limiter.WithLeaseTimeout(tt.timeout))
			if err != nil {
				t.Fatal(err)
			}
			l, parked, r, log := parkingLease(t, l)
			const n = 4
			for id := range n {
				if _, isParked, err := l.AllowAsync(context.Background(), r, log.to(id)); !isParked || err != nil {
					t.Fatalf("request %d: parked %v, %v; want parked", id, isParked, err)
				}
				if id == 0 {
					<-s.entered
				} else {
					<-parked
				}
			}
			time.Sleep(tt.hold)
			close(s.release)
			log.wait(t, n)
			l.WaitRefreshes()
			for id := range n {
				if a := log.only(t, id); !errors.Is(a.err, errInjected) {
					t.Errorf("request %d: %+v, %v; want the fetch's error", id, a.d, a.err)
				}
			}
			if calls := l.CentralCalls(); calls != tt.wantCalls {
				t.Errorf("CentralCalls %d, want %d", calls, tt.wantCalls)
			}
		})
	}
}

// TestLeaseAsyncContext: a parked request whose context ends is answered with its context's
// error at once, and never again when the fetch answers; its giving up, even as the fetch's
// owner, does not fail the others parked on the fetch.
func TestLeaseAsyncContext(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	s := newGateScripter(c)
	l, parked, r, log := parkingLease(t, newLease(t, s, limiter.BucketPolicy{Rate: 100, Burst: 100}, 10))

	owner, cancelOwner := context.WithCancel(context.Background())
	if _, isParked, err := l.AllowAsync(owner, r, log.to(0)); !isParked || err != nil {
		t.Fatalf("owner: parked %v, %v; want parked", isParked, err)
	}
	<-s.entered
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, isParked, err := l.AllowAsync(short, r, log.to(1)); !isParked || err != nil {
		t.Fatalf("request with a deadline: parked %v, %v; want parked", isParked, err)
	}
	<-parked
	if _, isParked, err := l.AllowAsync(context.Background(), r, log.to(2)); !isParked || err != nil {
		t.Fatalf("patient request: parked %v, %v; want parked", isParked, err)
	}
	<-parked
	cancelOwner()
	log.wait(t, 2) // the owner's cancel and the deadline, while the fetch is still held
	if a := log.only(t, 0); !errors.Is(a.err, context.Canceled) {
		t.Errorf("owner: %+v, %v; want context.Canceled", a.d, a.err)
	}
	if a := log.only(t, 1); !errors.Is(a.err, context.DeadlineExceeded) {
		t.Errorf("request with a deadline: %+v, %v; want context.DeadlineExceeded", a.d, a.err)
	}
	close(s.release)
	log.wait(t, 1)
	l.WaitRefreshes()
	if a := log.only(t, 2); a.err != nil || !a.d.Allowed {
		t.Errorf("patient request: %+v, %v; want allowed from the fetch its owner gave up on", a.d, a.err)
	}
	log.only(t, 0)
	log.only(t, 1)
	if out := l.Outstanding(); out != 9 {
		t.Errorf("Outstanding %d, want 9: the lease of 10 paid only the patient request", out)
	}
}

// TestLeaseAsyncConcurrent: many callers on a few keys through the pipelined client, all at one
// instant: every request is answered exactly once (at once or through its callback), and no key
// allows more than the burst, which is all its central bucket holds at that instant.
func TestLeaseAsyncConcurrent(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	const burst, keys, callers, each = 50, 4, 8, 100
	l := newLease(t, c, limiter.BucketPolicy{Rate: 1, Burst: burst}, 10)
	base := uniqueTenant(t)
	log := newAnswerLog()
	log.each = make(chan int, callers*each)
	var mu sync.Mutex
	now := map[int]answered{} // answered at once
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range each {
				id := g*each + i
				r := limiter.Request{Tenant: fmt.Sprintf("%s-%d", base, id%keys), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
				d, isParked, err := l.AllowAsync(context.Background(), r, log.to(id))
				if !isParked {
					mu.Lock()
					now[id] = answered{d, err}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	log.wait(t, callers*each-len(now))
	l.WaitRefreshes()
	allowed := make([]int, keys)
	for id := range callers * each {
		a, ok := now[id]
		log.mu.Lock()
		late := log.got[id]
		log.mu.Unlock()
		switch {
		case ok && len(late) == 0:
		case !ok && len(late) == 1:
			a = late[0]
		default:
			t.Fatalf("request %d: answered at once %v and %d times later; want exactly once", id, ok, len(late))
		}
		if a.err != nil {
			t.Fatalf("request %d: %v", id, a.err)
		}
		if a.d.Allowed {
			allowed[id%keys]++
		}
	}
	for k, n := range allowed {
		if n > burst || n < burst-10 {
			t.Errorf("key %d: %d allowed at one instant; want the burst, %d (less a lease at most)", k, n, burst)
		}
	}
}

// parkingLease readies l for a parking test: parked hears every request that starts waiting
// for a fetch, r is a request on a key of the test's own at t0, and log records the answers.
func parkingLease(t *testing.T, l *limiter.LeaseLimiter) (*limiter.LeaseLimiter, chan struct{}, limiter.Request, *answerLog) {
	t.Helper()
	parked := make(chan struct{}, 16)
	l.SetWaitHook(func() { parked <- struct{}{} })
	return l, parked, limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}, newAnswerLog()
}
