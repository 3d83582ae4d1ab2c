package attack_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/limiter/gateway"
	"ratelab/results"
	"ratelab/run/attack"
)

// Ratelab's own gateway tells the truth in its headers: every kind it sends is checked, and no
// answer contradicts an earlier one beyond the tolerance.
func TestHeaderHonestyGateway(t *testing.T) {
	t.Parallel()
	policy := limiter.BucketPolicy{Rate: 20, Burst: 5}
	lim, err := limiter.NewTokenBucket(policy)
	if err != nil {
		t.Fatal(err)
	}
	url := startGateway(t, lim, gateway.WithPolicy(policy))
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 300, Duration: 2 * time.Second, Tenants: 4, Seed: 5,
		Policy: policy, Out: t.TempDir(), Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Summary.HeaderHonesty
	if h == nil {
		t.Fatal("no header honesty in the summary: the gateway's headers were not read")
	}
	t.Logf("checked %v lies %v tolerance %.0f ms", h.Checked, h.Lies, h.ToleranceMs)
	for _, kind := range []string{attack.LieRetryEarlyAllow, attack.LieRemainingDeny, attack.LieRemainingAllow,
		attack.LieRemainingAboveLimit, attack.LieResetBackwards} {
		if h.Checked[kind] == 0 {
			t.Errorf("%s: nothing checked; want a real check", kind)
		}
	}
	if n := h.TotalLies(); n != 0 {
		t.Errorf("the gateway lied %d times: %v (checked %v)", n, h.Lies, h.Checked)
	}
}

// liar answers per endpoint with one kind of lie, per API key:
//   - retry: 429 with Retry-After: 60 and 200 in turn;
//   - remaining: 200 with RateLimit-Remaining: 5, then 429s still saying 5;
//   - reset: 200s whose RateLimit-Reset falls 10 s per answer.
type liar struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *liar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	id := r.Header.Get("X-API-Key") + r.URL.Path
	n := l.n[id]
	l.n[id]++
	l.mu.Unlock()
	h := w.Header()
	switch strings.Trim(r.URL.Path, "/") {
	case "retry":
		if n%2 == 0 {
			h.Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
	case "remaining":
		h.Set("RateLimit-Remaining", "5")
		if n > 0 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
	case "reset":
		h.Set("RateLimit-Remaining", "100")
		h.Set("RateLimit-Reset", strconv.Itoa(max(0, 1000-10*n)))
	}
	w.WriteHeader(http.StatusOK)
}

// A target whose headers lie is caught, each kind of lie counted.
func TestHeaderHonestyCatchesLies(t *testing.T) {
	t.Parallel()
	url := serve(t, &liar{n: map[string]int{}})
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 40, Duration: 2 * time.Second, Tenants: 2, Seed: 2,
		Endpoints: []string{"retry", "remaining", "reset"},
		Policy:    limiter.BucketPolicy{Rate: 1000, Burst: 1000}, Out: t.TempDir(), Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Summary.HeaderHonesty
	if h == nil {
		t.Fatal("no header honesty in the summary")
	}
	t.Logf("checked %v lies %v", h.Checked, h.Lies)
	for _, kind := range []string{attack.LieRetryEarlyAllow, attack.LieRemainingDeny, attack.LieResetBackwards} {
		if h.Lies[kind] == 0 {
			t.Errorf("%s: no lie counted (checked %d)", kind, h.Checked[kind])
		}
	}
	if n := h.Lies[attack.LieRemainingAllow] + h.Lies[attack.LieRetryLateDeny]; n != 0 {
		t.Errorf("%d lies of kinds the liar does not tell: %v", n, h.Lies)
	}
}

// A late denial: Retry-After: 1, then denials seconds later with nothing allowed between.
func TestHeaderHonestyLateDeny(t *testing.T) {
	t.Parallel()
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 10, Duration: 3 * time.Second, Tenants: 1,
		Policy: limiter.BucketPolicy{Rate: 10, Burst: 1}, Out: t.TempDir(), Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Summary.HeaderHonesty
	if h == nil || h.Lies[attack.LieRetryLateDeny] == 0 {
		t.Fatalf("header honesty %+v: want retry_after_late_deny counted", h)
	}
	if h.Lies[attack.LieRetryEarlyAllow] != 0 {
		t.Errorf("early allows without an allowed answer: %v", h.Lies)
	}
}

// A target that sends no rate-limit header gets no honesty section.
func TestHeaderHonestyAbsent(t *testing.T) {
	t.Parallel()
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	res, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 50, Duration: time.Second, Tenants: 2,
		Policy: limiter.BucketPolicy{Rate: 10, Burst: 1}, Out: t.TempDir(), Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if h := res.Summary.HeaderHonesty; h != nil {
		t.Errorf("header honesty %+v without headers; want none", h)
	}
}

// A target that echoes credentials in its response headers: results.bin (which keeps response
// headers, never request headers) holds them redacted, and the summary never holds the keys.
func TestResultsRedactEchoedSecrets(t *testing.T) {
	t.Parallel()
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo-Authorization", r.Header.Get("Authorization"))
		w.Header().Set("Set-Cookie", "session=cookie-zz7")
		w.Header().Set("X-Seen-Trace", r.Header.Get("X-Trace"))
		w.WriteHeader(http.StatusOK)
	}))
	dir := t.TempDir()
	_, err := attack.Attack(context.Background(), attack.Options{
		URL: url, Rate: 50, Duration: time.Second, Keys: []string{"sk-echo-1", "sk-echo-2"},
		KeyHeader: "Authorization", KeyFormat: "Bearer {key}", Header: http.Header{"X-Trace": {"visible"}},
		Method: http.MethodPut, Body: []byte("payload"),
		Policy: limiter.BucketPolicy{Rate: 100, Burst: 100}, Out: dir, Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	rs := decodeResults(t, filepath.Join(dir, attack.ResultsFile))
	if len(rs) == 0 {
		t.Fatal("no results")
	}
	for _, r := range rs {
		if r.Method != http.MethodPut || r.Code != http.StatusOK {
			t.Fatalf("result %s %d, want PUT 200", r.Method, r.Code)
		}
		if v := r.Headers.Get("X-Echo-Authorization"); v != attack.Redacted {
			t.Fatalf("echoed Authorization stored as %q", v)
		}
		if v := r.Headers.Get("Set-Cookie"); v != attack.Redacted {
			t.Fatalf("Set-Cookie stored as %q", v)
		}
		if v := r.Headers.Get("X-Seen-Trace"); v != "visible" {
			t.Fatalf("a plain header was redacted or lost: %q", v)
		}
	}
	for _, f := range []string{attack.ResultsFile, results.SummaryFile, results.TimeseriesFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"sk-echo", "cookie-zz7"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s holds %q", f, secret)
			}
		}
	}
}
