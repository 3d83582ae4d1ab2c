package limiter_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"ratelab/limiter"
)

func TestTwoTierPolicyValidate(t *testing.T) {
	t.Parallel()
	good := limiter.TwoTierPolicy{Bucket: limiter.BucketPolicy{Rate: 100, Burst: 200}, Quota: 10_000, QuotaWindow: 24 * time.Hour}
	tests := []struct {
		name string
		have func(p *limiter.TwoTierPolicy)
		want []string // substrings of the error; none means valid
	}{
		{"daily quota and burst bucket", func(*limiter.TwoTierPolicy) {}, nil},
		{"bad bucket", func(p *limiter.TwoTierPolicy) { p.Bucket.Rate = 0 }, []string{"bucket:", "rate 0"}},
		{"zero quota", func(p *limiter.TwoTierPolicy) { p.Quota = 0 }, []string{"quota 0"}},
		{"quota above 2^53", func(p *limiter.TwoTierPolicy) { p.Quota = 1<<53 + 1 }, []string{"quota 9007199254740993"}},
		{"fractional window", func(p *limiter.TwoTierPolicy) { p.QuotaWindow = 1500 * time.Microsecond }, []string{"quota window:", "1.5ms"}},
		{"every problem at once", func(p *limiter.TwoTierPolicy) {
			p.Bucket.Burst, p.Quota, p.QuotaWindow = 0, -1, 0
		}, []string{"bucket:", "burst 0", "quota -1", "quota window:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := good
			tt.have(&p)
			err := p.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", p, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error naming %q", p, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate(%+v) = %q, want it to contain %q", p, err, w)
				}
			}
			if _, err := limiter.NewTwoTier(p); !errors.Is(err, limiter.ErrBadConfig) {
				t.Errorf("NewTwoTier(%+v) = %v, want ErrBadConfig", p, err)
			}
		})
	}
}

func TestTwoTierRefusesOptions(t *testing.T) {
	t.Parallel()
	p := limiter.TwoTierPolicy{Bucket: suitePolicy, Quota: 5, QuotaWindow: time.Second}
	for _, tt := range []struct {
		name string
		have limiter.Option
	}{
		{"WithRedisClock", limiter.WithRedisClock()},
		{"WithPolicyFunc", limiter.WithPolicyFunc(func(string, string) limiter.BucketPolicy { return suitePolicy })},
		{"negative timeout", limiter.WithTimeout(-1)},
	} {
		if _, err := limiter.NewTwoTier(p, tt.have); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("NewTwoTier with %s: %v, want ErrBadConfig", tt.name, err)
		}
		if _, err := limiter.NewRedisTwoTier(nil, p, tt.have); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("NewRedisTwoTier with %s: %v, want ErrBadConfig", tt.name, err)
		}
	}
	if _, err := limiter.NewRedisTwoTier(nil, p); !errors.Is(err, limiter.ErrBadConfig) {
		t.Errorf("NewRedisTwoTier(nil client): %v, want ErrBadConfig", err)
	}
}

func TestQuotaKeyAndTier(t *testing.T) {
	t.Parallel()
	if have, want := limiter.QuotaKey("acme", 19_700), "rl:{acme}:quota:19700"; have != want {
		t.Errorf("QuotaKey = %q, want %q", have, want)
	}
	for _, tt := range []struct {
		have limiter.Tier
		want string
	}{{limiter.TierNone, "none"}, {limiter.TierBucket, "bucket"}, {limiter.TierQuota, "quota"}, {7, "tier(7)"}} {
		if s := tt.have.String(); s != tt.want {
			t.Errorf("Tier(%d).String() = %q, want %q", tt.have, s, tt.want)
		}
	}
}

func TestDecodeTwoTierReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		have     any
		want     limiter.Decision
		wantTier limiter.Tier
		ok       bool
	}{
		{"allowed", []any{int64(1), int64(4), int64(0), int64(12), int64(0)}, allow(4, 12*ms), limiter.TierNone, true},
		{"quota denied", []any{int64(0), int64(0), int64(500), int64(500), int64(2)}, deny(0, 500*ms, 500*ms), limiter.TierQuota, true},
		{"never", []any{int64(0), int64(10), int64(-1), int64(0), int64(1)}, deny(10, limiter.RetryNever, 0), limiter.TierBucket, true},
		{"four elements", []any{int64(1), int64(4), int64(0), int64(12)}, limiter.Decision{}, 0, false},
		{"not an array", "OK", limiter.Decision{}, 0, false},
		{"tier on an allowed request", []any{int64(1), int64(4), int64(0), int64(12), int64(1)}, limiter.Decision{}, 0, false},
		{"no tier on a denial", []any{int64(0), int64(0), int64(5), int64(5), int64(0)}, limiter.Decision{}, 0, false},
		{"tier 3", []any{int64(0), int64(0), int64(5), int64(5), int64(3)}, limiter.Decision{}, 0, false},
		{"tier not an integer", []any{int64(0), int64(0), int64(5), int64(5), "2"}, limiter.Decision{}, 0, false},
		{"bad inner field", []any{int64(2), int64(0), int64(5), int64(5), int64(1)}, limiter.Decision{}, 0, false},
	}
	for _, tt := range tests {
		d, tier, err := limiter.DecodeTwoTierReply(tt.have)
		if !tt.ok {
			if !errors.Is(err, limiter.ErrBadReply) {
				t.Errorf("%s: have %+v %v, %v; want ErrBadReply", tt.name, d, tier, err)
			}
			continue
		}
		if err != nil || d != tt.want || tier != tt.wantTier {
			t.Errorf("%s: have %+v %v, %v; want %+v %v", tt.name, d, tier, err, tt.want, tt.wantTier)
		}
	}
}
