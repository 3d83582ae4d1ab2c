package attack

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		have       string
		name, val  string
		errHas     string
		errLacks   string
		wantErrors bool
	}{
		{have: "Accept: application/json", name: "Accept", val: "application/json"},
		{have: "X-Empty:", name: "X-Empty", val: ""},
		{have: "Authorization: Bearer a:b", name: "Authorization", val: "Bearer a:b"},
		{have: "NoColon", wantErrors: true, errHas: "Name: value"},
		{have: "Authorization Bearer sekrit", wantErrors: true, errLacks: "sekrit"},
		{have: "Bad Name: x", wantErrors: true, errHas: "not a header name"},
		{have: "X-Api-Token bad: sekrit", wantErrors: true, errLacks: "sekrit"},
	} {
		name, val, err := ParseHeader(tc.have)
		if (err != nil) != tc.wantErrors {
			t.Errorf("ParseHeader(%q): err %v, want error %v", tc.have, err, tc.wantErrors)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.errHas) ||
				(tc.errLacks != "" && strings.Contains(err.Error(), tc.errLacks)) {
				t.Errorf("ParseHeader(%q): %v", tc.have, err)
			}
			continue
		}
		if name != tc.name || val != tc.val {
			t.Errorf("ParseHeader(%q) = %q, %q; want %q, %q", tc.have, name, val, tc.name, tc.val)
		}
	}
}

func TestSensitive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"Authorization", true}, {"proxy-authorization", true}, {"Set-Cookie", true}, {"X-Auth-Token", true},
		{"X-Api-Key", true}, {"X-Tenant", true}, {"Accept", false}, {"RateLimit-Remaining", false}, {"Retry-After", false},
	} {
		if have := Sensitive(tc.name, "X-Tenant"); have != tc.want {
			t.Errorf("Sensitive(%q) = %v, want %v", tc.name, have, tc.want)
		}
	}
}

func TestParseDeclared(t *testing.T) {
	t.Parallel()
	b, w, err := ParseDeclared("limit=100,window=1s")
	if err != nil || b.Rate != 0 || w != (WindowPolicy{Limit: 100, Window: time.Second}) {
		t.Errorf("window: %+v %+v %v", b, w, err)
	}
	b, w, err = ParseDeclared("rate=50,burst=100")
	if err != nil || b.Rate != 50 || b.Burst != 100 || w.Limit != 0 {
		t.Errorf("bucket: %+v %+v %v", b, w, err)
	}
	for _, bad := range []string{"limit=0,window=1s", "limit=5", "limit=5,window=0s", "limit=5,window=1s,rate=2", "window=x,limit=1"} {
		if _, _, err := ParseDeclared(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseDeclared(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func TestReadClaims(t *testing.T) {
	t.Parallel()
	date := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		have map[string]string
		want claims
	}{
		{"draft fields", map[string]string{"RateLimit": `"burst";r=17;t=2`, "RateLimit-Policy": `"burst";q=200;w=2`},
			claims{remaining: true, rem: 17, reset: true, resetSecs: 2, limit: true, lim: 200}},
		{"least remaining of several", map[string]string{"RateLimit": `"day";r=900;t=3600, "burst";r=3;t=1`, "RateLimit-Policy": `"day";q=1000;w=86400, "burst";q=10;w=1`},
			claims{remaining: true, rem: 3, reset: true, resetSecs: 1, limit: true, lim: 10}},
		{"older draft", map[string]string{"RateLimit-Limit": "100, 100;w=60", "RateLimit-Remaining": "7", "RateLimit-Reset": "30"},
			claims{remaining: true, rem: 7, reset: true, resetSecs: 30, limit: true, lim: 100}},
		{"x- family, epoch reset", map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1796637600"},
			claims{remaining: true, limit: true, lim: 60, reset: true, resetAbs: true, resetAt: time.Unix(1796637600, 0)}},
		{"retry seconds", map[string]string{"Retry-After": "5"}, claims{retry: true, retrySecs: 5}},
		{"retry date", map[string]string{"Retry-After": date.Format(http.TimeFormat)}, claims{retry: true, retryDate: true, retryAt: date}},
		{"garbage", map[string]string{"Retry-After": "soon", "RateLimit": "r=;t", "RateLimit-Remaining": "-3"}, claims{}},
	} {
		h := http.Header{}
		for k, v := range tc.have {
			h.Set(k, v)
		}
		have := readClaims(h)
		if !have.retryAt.Equal(tc.want.retryAt) || !have.resetAt.Equal(tc.want.resetAt) {
			t.Errorf("%s: times %v %v, want %v %v", tc.name, have.retryAt, have.resetAt, tc.want.retryAt, tc.want.resetAt)
		}
		have.retryAt, have.resetAt, tc.want.retryAt, tc.want.resetAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if have != tc.want {
			t.Errorf("%s: readClaims = %+v, want %+v", tc.name, have, tc.want)
		}
	}
}

// Rate-limit headers come from the target: reading any value must not panic.
func FuzzReadClaims(f *testing.F) {
	f.Add(`"burst";r=17;t=2`, `"burst";q=200;w=2`, "5", "30")
	f.Add(`a;r=1, b;r=0;t=9`, "", "Tue, 07 Dec 2026 10:00:00 GMT", "1796637600")
	f.Fuzz(func(t *testing.T, rl, policy, retry, reset string) {
		h := http.Header{"Ratelimit": {rl}, "Ratelimit-Policy": {policy}, "Retry-After": {retry}, "X-Ratelimit-Reset": {reset}}
		c := readClaims(h)
		if c.remaining && c.rem < 0 {
			t.Errorf("remaining %d < 0 from %q", c.rem, rl)
		}
	})
}
