package limiter_test

import (
	"context"
	"testing"
	"time"

	"ratelab/limiter"
)

// FuzzTwinMatchesRedis feeds fuzzer-chosen request sequences to each algorithm's in-memory twin
// and to its Lua script on the package's real Redis Cluster, in the same order, and wants the
// same decision every time. The property tests cover seeded random sequences; the fuzzer looks
// for the sequences they do not draw (committed corpus: testdata/fuzz/FuzzTwinMatchesRedis).
//
// Input: algo picks the algorithm, rate and burst the policy (kept in the ranges the algorithms
// accept), and ops is read three bytes per request: a clock step, a cost and a key.
func FuzzTwinMatchesRedis(f *testing.F) {
	f.Add(uint8(0), uint16(500), uint8(10), []byte{1, 1, 0, 2, 1, 1, 200, 9, 0, 0, 11, 2, 130, 1, 1})
	f.Add(uint8(1), uint16(7), uint8(3), []byte{0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 250, 1, 0, 0, 1, 0})
	f.Add(uint8(2), uint16(3), uint8(2), []byte{5, 1, 0, 5, 1, 0, 5, 1, 0, 240, 2, 1, 10, 1, 1})
	f.Add(uint8(3), uint16(1000), uint8(5), []byte{100, 3, 2, 180, 1, 2, 0, 5, 2, 7, 0, 1})
	f.Add(uint8(4), uint16(50), uint8(4), []byte{20, 1, 0, 20, 1, 0, 20, 4, 0, 128, 1, 0, 255, 9, 1})
	f.Fuzz(func(t *testing.T, algo uint8, rate uint16, burst uint8, ops []byte) {
		if len(ops) > 3*100 {
			ops = ops[:3*100] // bounded work per input (and per minimisation step): one script call per request
		}
		_, c := sharedCluster(t)
		limit := int64(burst%50) + 1
		perSec := float64(rate%5000) + 1
		window := time.Duration(1000*limit/int64(perSec)+1) * time.Millisecond
		window = max(window, 10*time.Millisecond)
		var twin, central limiter.Limiter
		var maxBack int64 = 5_000 // how far behind the newest time a request may be stamped
		var err1, err2 error
		opt := limiter.WithTimeout(5 * time.Second)
		switch algo % 5 {
		case 0:
			p := limiter.BucketPolicy{Rate: perSec, Burst: limit}
			twin, err1 = limiter.NewTokenBucket(p)
			central, err2 = limiter.NewRedisTokenBucket(c, p, opt)
			maxBack = 1 << 40 // the bucket never moves its time backwards: any skew is fine
		case 1:
			p := limiter.GCRAPolicy{Rate: perSec, Burst: limit}
			twin, err1 = limiter.NewGCRA(p)
			central, err2 = limiter.NewRedisGCRA(c, p, opt)
		case 2:
			p := limiter.FixedWindowPolicy{Limit: limit, Window: window}
			twin, err1 = limiter.NewFixedWindow(p)
			central, err2 = limiter.NewRedisFixedWindow(c, p, opt)
			maxBack = window.Milliseconds()
		case 3:
			p := limiter.SlidingWindowPolicy{Limit: limit, Window: window}
			twin, err1 = limiter.NewSlidingWindow(p)
			central, err2 = limiter.NewRedisSlidingWindow(c, p, opt)
			maxBack = window.Milliseconds()
		case 4:
			p := limiter.SlidingLogPolicy{Limit: limit, Window: window}
			twin, err1 = limiter.NewSlidingLog(p)
			central, err2 = limiter.NewRedisSlidingLog(c, p, opt)
		}
		if err1 != nil || err2 != nil {
			t.Fatalf("algo %d rate %v limit %d window %v: %v / %v", algo%5, perSec, limit, window, err1, err2)
		}
		tenants := [2]string{uniqueTenant(t), uniqueTenant(t)}
		ctx := context.Background()
		now, newest := t0, t0
		for i := 0; i+2 < len(ops); i += 3 {
			step, cost, key := ops[i], ops[i+1], ops[i+2]
			switch {
			case step < 200:
				now += int64(step) // small steps forwards, 0 included
			case step < 240:
				now -= int64(step-199) * 50 // back by up to 2 s: a gateway behind the others
			default:
				now += int64(step-239) * 3_600_000 // hours: idle keys, expiry, full refills
			}
			now = max(now, newest-maxBack)
			newest = max(newest, now)
			r := limiter.Request{
				Tenant:   tenants[key&1],
				Endpoint: string(rune('a' + (key>>1)%4)),
				Cost:     int64(cost % uint8(2*limit+2)),
				Now:      time.UnixMilli(now),
			}
			have, err1 := twin.Allow(ctx, r)
			want, err2 := central.Allow(ctx, r)
			if err1 != nil || err2 != nil {
				t.Fatalf("op %d %+v: twin error %v, redis error %v", i/3, r, err1, err2)
			}
			have.Source, want.Source = 0, 0
			if have != want {
				t.Fatalf("algo %d rate %v limit %d window %v op %d (t0%+d ms) %s/%s cost %d: twin %+v, redis %+v",
					algo%5, perSec, limit, window, i/3, now-t0, r.Tenant, r.Endpoint, r.Cost, have, want)
			}
		}
	})
}
