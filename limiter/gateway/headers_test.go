package gateway

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"ratelab/limiter"
)

func TestDecisionHeaders(t *testing.T) {
	t.Parallel()
	type want struct {
		limit, remaining, reset, retryAfter, source string
	}
	for _, tc := range []struct {
		name  string
		have  limiter.Decision
		limit int64
		want  want
	}{
		{"allowed full", limiter.Decision{Allowed: true, Remaining: 199, ResetAfter: 10 * time.Millisecond}, 200,
			want{"200", "199", "1", "", "central"}},
		{"allowed reset exact seconds", limiter.Decision{Allowed: true, Remaining: 0, ResetAfter: 2 * time.Second}, 200,
			want{"200", "0", "2", "", "central"}},
		{"allowed bucket full reset 0", limiter.Decision{Allowed: true, Remaining: 5, Source: limiter.Lease}, 5,
			want{"5", "5", "0", "", "lease"}},
		{"denied rounds retry up", limiter.Decision{Remaining: 0, RetryAfter: 1001 * time.Millisecond, ResetAfter: 200 * time.Second}, 200,
			want{"200", "0", "200", "2", "central"}},
		{"denied sub-second retry is 1", limiter.Decision{RetryAfter: time.Millisecond, ResetAfter: time.Millisecond}, 3,
			want{"3", "0", "1", "1", "central"}},
		{"denied zero retry is still 1", limiter.Decision{Source: limiter.FailClosed}, 0,
			want{"", "0", "0", "1", "fail-closed"}},
		{"fail-open, limit unknown", limiter.Decision{Allowed: true, Source: limiter.FailOpen}, 0,
			want{"", "0", "0", "", "fail-open"}},
		{"negative remaining clamps", limiter.Decision{Allowed: true, Remaining: -3}, 10,
			want{"10", "0", "0", "", "central"}},
		{"large values", limiter.Decision{Allowed: true, Remaining: 123456, ResetAfter: 86400 * time.Second}, 1_000_000,
			want{"1000000", "123456", "86400", "", "central"}},
		{"unknown source", limiter.Decision{Allowed: true, Source: limiter.Source(99)}, 1,
			want{"1", "0", "0", "", "unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			var p limiter.BucketPolicy // unknown when limit is 0
			if tc.limit > 0 {
				p = limiter.BucketPolicy{Rate: 100, Burst: tc.limit}
			}
			setDecisionHeaders(h, new(scratch), tc.have, p)
			have := want{h.Get(HeaderLimit), h.Get(HeaderRemaining), h.Get(HeaderReset), h.Get(HeaderRetryAfter), h.Get(HeaderSource)}
			if have != tc.want {
				t.Errorf("headers of %+v limit %d:\nhave %+v\nwant %+v", tc.have, tc.limit, have, tc.want)
			}
			// The structured fields carry the same numbers: r and t as Remaining and Reset, and
			// the policy's window is the seconds 100 tokens/s take to refill the burst.
			if rl, want := h.Get(HeaderRateLimit), `"burst";r=`+tc.want.remaining+`;t=`+tc.want.reset; rl != want {
				t.Errorf("%s = %q, want %q", HeaderRateLimit, rl, want)
			}
			wantPolicy := ""
			if tc.limit > 0 {
				wantPolicy = `"burst";q=` + tc.want.limit + `;w=` + strconv.FormatInt(max(1, (tc.limit+99)/100), 10)
			}
			if pol := h.Get(HeaderPolicy); pol != wantPolicy {
				t.Errorf("%s = %q, want %q", HeaderPolicy, pol, wantPolicy)
			}
		})
	}
}

func TestWindowSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    limiter.BucketPolicy
		want int64
	}{
		{limiter.BucketPolicy{Rate: 100, Burst: 200}, 2},
		{limiter.BucketPolicy{Rate: 100, Burst: 150}, 2},
		{limiter.BucketPolicy{Rate: 1000, Burst: 10}, 1}, // refills in 10 ms: at least 1 s
		{limiter.BucketPolicy{Rate: 10_000.0 / 86_400, Burst: 10_000}, 86_400},
		{limiter.BucketPolicy{}, 0},
	} {
		if have := WindowSeconds(tc.p); have != tc.want {
			t.Errorf("WindowSeconds(%+v) = %d, want %d", tc.p, have, tc.want)
		}
	}
}

func TestDeniedBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		have time.Duration
		want string
	}{
		{0, `{"error":"rate limited","retry_after_ms":0}` + "\n"},
		{time.Microsecond, `{"error":"rate limited","retry_after_ms":1}` + "\n"},
		{1500 * time.Millisecond, `{"error":"rate limited","retry_after_ms":1500}` + "\n"},
		{1500*time.Millisecond + 1, `{"error":"rate limited","retry_after_ms":1501}` + "\n"},
		{-time.Second, `{"error":"rate limited","retry_after_ms":0}` + "\n"},
	} {
		if have := string(deniedBody(nil, limiter.Decision{RetryAfter: tc.have})); have != tc.want {
			t.Errorf("deniedBody(RetryAfter %v) = %q, want %q", tc.have, have, tc.want)
		}
	}
}

func TestDefaultEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ have, want string }{
		{"/search/x", "search"},
		{"/search", "search"},
		{"/search/", "search"},
		{"/a/b/c", "a"},
		{"/", RootEndpoint},
		{"", RootEndpoint},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://x/", nil)
		r.URL.Path = tc.have
		if have := DefaultEndpoint(r); have != tc.want {
			t.Errorf("DefaultEndpoint(%q) = %q, want %q", tc.have, have, tc.want)
		}
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		apiKey string
		auth   string
		want   string
	}{
		{"x-api-key", "k1", "", "k1"},
		{"bearer", "", "Bearer k2", "k2"},
		{"bearer lower case scheme", "", "bearer k3", "k3"},
		{"x-api-key wins", "k1", "Bearer k2", "k1"},
		{"basic is not a key", "", "Basic dXNlcjpwYXNz", ""},
		{"bearer without token", "", "Bearer ", ""},
		{"nothing", "", "", ""},
		{"blank x-api-key falls back", "  ", "Bearer k4", "k4"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if tc.apiKey != "" {
			r.Header.Set(HeaderAPIKey, tc.apiKey)
		}
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		if have := apiKey(r); have != tc.want {
			t.Errorf("%s: apiKey = %q, want %q", tc.name, have, tc.want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr        string
		allowRemote bool
		wantErr     bool
	}{
		{"127.0.0.1:8080", false, false},
		{"127.0.0.2:0", false, false},
		{"[::1]:8080", false, false},
		{"localhost:8080", false, false},
		{":8080", false, true},
		{"0.0.0.0:8080", false, true},
		{"10.1.2.3:8080", false, true},
		{"10.1.2.3:8080", true, false},
		{"example.com:80", false, true},
		{"no-port", false, true},
		{"no-port", true, true},
	} {
		err := CheckListen(tc.addr, tc.allowRemote)
		if (err != nil) != tc.wantErr {
			t.Errorf("CheckListen(%q, %v) = %v, want error %v", tc.addr, tc.allowRemote, err, tc.wantErr)
		}
	}
}
