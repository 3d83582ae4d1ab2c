package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ratelab/limiter"
)

// testPolicy: 3 tokens, refilled at 0.1/s. Under the frozen test clock nothing refills, so a
// key allows exactly 3 requests; a denied one is told to wait 1/0.1 = 10 s. The policy's TTL
// (30 s of real time) outlives every test, so Redis never expires a key mid-test.
var testPolicy = limiter.BucketPolicy{Rate: 0.1, Burst: 3}

// testNow is the frozen gateway clock of the tests.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func frozenClock() time.Time { return testNow }

// get sends GET url with the header pairs (name, value, ...) and returns the response and body.
func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp, string(body)
}

// runSuite runs the gateway's HTTP behaviour over lim (fresh, with testPolicy), whose decisions
// carry Source src. The subtests share one server and run in order: the last one checks the
// metrics the others produced.
func runSuite(t *testing.T, lim limiter.Limiter, src limiter.Source) {
	srv, err := NewServer("127.0.0.1:0", lim, nil, WithPolicy(testPolicy), WithClock(frozenClock))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	const secretA, secretB = "sk-live-ALICE-7f3a9c", "sk-live-BOB-0d41e2"

	t.Run("burst then 429", func(t *testing.T) {
		for i := range testPolicy.Burst {
			resp, body := get(t, ts.URL+"/search/q", HeaderAPIKey, secretA)
			if resp.StatusCode != http.StatusOK || body != string(echoBody) {
				t.Fatalf("request %d: status %d body %q, want 200 %q", i+1, resp.StatusCode, body, echoBody)
			}
			wantRemaining := itoa(testPolicy.Burst - 1 - i)
			if have := resp.Header.Get(HeaderRemaining); have != wantRemaining {
				t.Errorf("request %d: %s = %q, want %q", i+1, HeaderRemaining, have, wantRemaining)
			}
			if have := resp.Header.Get(HeaderLimit); have != "3" {
				t.Errorf("request %d: %s = %q, want 3", i+1, HeaderLimit, have)
			}
			if have := resp.Header.Get(HeaderSource); have != src.String() {
				t.Errorf("request %d: %s = %q, want %q", i+1, HeaderSource, have, src)
			}
		}
		resp, body := get(t, ts.URL+"/search/q", HeaderAPIKey, secretA)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("request past the burst: status %d, want 429", resp.StatusCode)
		}
		// One token at 0.1/s takes 10 s; the bucket refills its 3 tokens in 30 s.
		for name, want := range map[string]string{
			HeaderRetryAfter: "10", HeaderRemaining: "0", HeaderLimit: "3", HeaderReset: "30",
			"Content-Type": "application/json", HeaderSource: src.String(),
		} {
			if have := resp.Header.Get(name); have != want {
				t.Errorf("429: %s = %q, want %q", name, have, want)
			}
		}
		var got struct {
			Error        string `json:"error"`
			RetryAfterMs int64  `json:"retry_after_ms"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("429 body %q: %v", body, err)
		}
		if got.Error != "rate limited" || got.RetryAfterMs != 10000 {
			t.Errorf("429 body = %+v, want rate limited / 10000 ms", got)
		}
	})

	t.Run("401 without identity", func(t *testing.T) {
		for _, hdr := range [][]string{nil, {"Authorization", "Basic dXNlcjpwYXNz"}, {"Authorization", "Bearer "}} {
			resp, body := get(t, ts.URL+"/search/q", hdr...)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"error":"missing API key`) {
				t.Errorf("headers %q: status %d body %q, want 401 with a JSON error", hdr, resp.StatusCode, body)
			}
			if resp.Header.Get("Www-Authenticate") == "" {
				t.Errorf("headers %q: 401 without WWW-Authenticate", hdr)
			}
		}
	})

	t.Run("bearer is the same identity", func(t *testing.T) {
		const key = "bearer-tenant"
		for i := range testPolicy.Burst {
			resp, _ := get(t, ts.URL+"/search", "Authorization", "Bearer "+key)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("bearer request %d: status %d, want 200", i+1, resp.StatusCode)
			}
		}
		// The bucket the bearer form emptied is the X-API-Key form's bucket too.
		if resp, _ := get(t, ts.URL+"/search", HeaderAPIKey, key); resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("X-API-Key after the bearer form emptied the bucket: status %d, want 429", resp.StatusCode)
		}
	})

	t.Run("tenants and endpoints are independent", func(t *testing.T) {
		// secretA's search bucket is empty since the first subtest.
		if resp, _ := get(t, ts.URL+"/search/q", HeaderAPIKey, secretA); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("tenant A search: status %d, want 429", resp.StatusCode)
		}
		if resp, _ := get(t, ts.URL+"/search/q", HeaderAPIKey, secretB); resp.StatusCode != http.StatusOK {
			t.Errorf("tenant B search while A is limited: status %d, want 200", resp.StatusCode)
		}
		if resp, _ := get(t, ts.URL+"/orders", HeaderAPIKey, secretA); resp.StatusCode != http.StatusOK {
			t.Errorf("tenant A orders while A's search is limited: status %d, want 200", resp.StatusCode)
		}
	})

	t.Run("bad tenant is 400", func(t *testing.T) {
		resp, body := get(t, ts.URL+"/search", HeaderAPIKey, "evil{key}")
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(body, "evil") {
			t.Errorf("tenant with braces: status %d body %q, want 400 not echoing the key", resp.StatusCode, body)
		}
	})

	t.Run("healthz is not limited", func(t *testing.T) {
		if resp, _ := get(t, ts.URL+HealthPath); resp.StatusCode != http.StatusOK {
			t.Errorf("/healthz without a key: status %d, want 200", resp.StatusCode)
		}
	})

	t.Run("metrics count and hide keys", func(t *testing.T) {
		resp, body := get(t, ts.URL+MetricsPath)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics: status %d", resp.StatusCode)
		}
		// search: 3 + 3 (bearer) + 1 (B) allowed; 1 + 1 + 1 denied; 1 error (bad tenant).
		for _, want := range []string{
			`ratelab_gateway_decisions_total{endpoint="search",outcome="allowed",source="` + src.String() + `"} 7`,
			`ratelab_gateway_decisions_total{endpoint="search",outcome="denied",source="` + src.String() + `"} 3`,
			`ratelab_gateway_decisions_total{endpoint="search",outcome="error",source="none"} 1`,
			`ratelab_gateway_decisions_total{endpoint="orders",outcome="allowed",source="` + src.String() + `"} 1`,
			`ratelab_gateway_decision_seconds_count{outcome="allowed"} 8`,
			`ratelab_gateway_decision_seconds_count{outcome="denied"} 3`,
			`ratelab_gateway_decision_seconds_count{outcome="error"} 1`,
			`ratelab_gateway_unauthorized_total 3`,
			`ratelab_build_info{commit="`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		for _, secret := range []string{secretA, secretB, "bearer-tenant", "evil", "ALICE", "BOB"} {
			if strings.Contains(body, secret) {
				t.Errorf("/metrics contains %q: keys and tenants must never be exported", secret)
			}
		}
	})
}

func TestSuiteTokenBucket(t *testing.T) {
	t.Parallel()
	lim, err := limiter.NewTokenBucket(testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	runSuite(t, lim, limiter.Local)
}
