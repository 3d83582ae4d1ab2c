package limiter

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestDecodeLeaseReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		have        any
		want, least int64
		wantGranted int64
		wantDeny    Decision
		wantErr     bool
	}{
		{"grant", []any{int64(10), int64(5), int64(0), int64(30)}, 10, 1, 10, Decision{}, false},
		{"partial grant at least min", []any{int64(3), int64(0), int64(0), int64(30)}, 10, 3, 3, Decision{}, false},
		{"refused", []any{int64(0), int64(1), int64(4), int64(30)}, 10, 2, 0, Decision{Remaining: 1, RetryAfter: 4 * time.Millisecond, ResetAfter: 30 * time.Millisecond}, false},
		{"refused forever", []any{int64(0), int64(9), int64(-1), int64(2)}, 11, 11, 0, Decision{Remaining: 9, RetryAfter: RetryNever, ResetAfter: 2 * time.Millisecond}, false},
		{"not an array", "OK", 10, 1, 0, Decision{}, true},
		{"three elements", []any{int64(1), int64(0), int64(0)}, 10, 1, 0, Decision{}, true},
		{"string element", []any{"1", int64(0), int64(0), int64(0)}, 10, 1, 0, Decision{}, true},
		{"grant above want", []any{int64(11), int64(0), int64(0), int64(0)}, 10, 1, 0, Decision{}, true},
		{"grant below min", []any{int64(1), int64(0), int64(0), int64(0)}, 10, 2, 0, Decision{}, true},
		{"negative remaining", []any{int64(0), int64(-1), int64(1), int64(0)}, 10, 1, 0, Decision{}, true},
		{"retry with a grant", []any{int64(2), int64(0), int64(1), int64(0)}, 10, 1, 0, Decision{}, true},
		{"zero retry without a grant", []any{int64(0), int64(0), int64(0), int64(0)}, 10, 1, 0, Decision{}, true},
		{"negative reset", []any{int64(2), int64(0), int64(0), int64(-3)}, 10, 1, 0, Decision{}, true},
	}
	for _, tt := range tests {
		granted, deny, err := decodeLeaseReply(tt.have, tt.want, tt.least)
		if tt.wantErr {
			if !errors.Is(err, ErrBadReply) {
				t.Errorf("%s: have %d, %+v, %v; want an error wrapping ErrBadReply", tt.name, granted, deny, err)
			}
			continue
		}
		if err != nil || granted != tt.wantGranted || deny != tt.wantDeny {
			t.Errorf("%s: have %d, %+v, %v; want %d, %+v", tt.name, granted, deny, err, tt.wantGranted, tt.wantDeny)
		}
	}
}

func TestNewLeaseLimiterRefusesBadConfig(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: the constructor sends nothing
	defer c.Close()
	p := BucketPolicy{Rate: 10, Burst: 100}
	tests := []struct {
		name string
		c    redis.Scripter
		p    BucketPolicy
		size int64
		opts []LeaseOption
	}{
		{"nil client", nil, p, 10, nil},
		{"bad policy", c, BucketPolicy{Rate: 0, Burst: 1}, 1, nil},
		{"zero size", c, p, 0, nil},
		{"size above burst", c, p, 101, nil},
		{"TTL below 1 ms", c, p, 10, []LeaseOption{WithLeaseTTL(time.Microsecond)}},
		{"negative timeout", c, p, 10, []LeaseOption{WithLeaseTimeout(-time.Second)}},
		{"negative refresh", c, p, 10, []LeaseOption{WithLeaseRefresh(-0.1)}},
		{"refresh of 1", c, p, 10, []LeaseOption{WithLeaseRefresh(1)}},
		{"refresh NaN", c, p, 10, []LeaseOption{WithLeaseRefresh(math.NaN())}},
	}
	for _, tt := range tests {
		if l, err := NewLeaseLimiter(tt.c, tt.p, tt.size, tt.opts...); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: have %v, %v; want an error wrapping ErrBadConfig", tt.name, l, err)
		}
	}
	if _, err := NewLeaseLimiter(c, p, 100, WithLeaseTTL(time.Millisecond), WithLeaseTimeout(0)); err != nil {
		t.Errorf("size = burst, TTL 1 ms, timeout 0: %v; want accepted", err)
	}
}

// SetWaitHook makes l call f each time a request starts waiting for a fetch in flight, so that
// the external tests can hold a fetch until a waiter is surely waiting. Test builds only.
func (l *LeaseLimiter) SetWaitHook(f func()) { l.onWait = f }

// WaitRefreshes waits for the refresh-ahead fetches running, so that a test can replay a stream
// as if every round trip were instant. Test builds only.
func (l *LeaseLimiter) WaitRefreshes() { l.refreshing.Wait() }
