package gateway

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"ratelab/limiter"
)

// TestHotKeysGuarantees feeds a skewed stream and checks Space-Saving's two promises against the
// exact counts: every key above N/K is listed, and no estimate is below the truth or above it by
// more than its error.
func TestHotKeysGuarantees(t *testing.T) {
	t.Parallel()
	const k, n, tenants = 16, 200_000, 5_000
	h := NewHotKeys(k)
	exact := map[string]int64{}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.2, 1, tenants-1)
	for range n {
		tenant := fmt.Sprintf("tenant-%d", zipf.Uint64())
		ep := []string{"read", "write"}[rng.IntN(2)]
		h.Observe(tenant, ep)
		exact[tenant+"/"+ep]++
	}
	rep := h.Top(0)
	if rep.Requests != n || len(rep.Keys) != k || rep.Guaranteed != n/k {
		t.Fatalf("report: %d requests, %d keys, guaranteed above %d; want %d, %d, %d", rep.Requests, len(rep.Keys), rep.Guaranteed, n, k, n/k)
	}
	listed := map[string]HotKey{}
	for _, hk := range rep.Keys {
		listed[hk.Key+"/"+hk.Endpoint] = hk
	}
	for key, c := range exact {
		tenant, ep, _ := strings.Cut(key, "/")
		hk, ok := listed[HashKey(tenant)+"/"+ep]
		if c > n/k && !ok {
			t.Errorf("%s: %d requests (> N/K = %d) but not listed", key, c, n/k)
		}
		if ok && (hk.Count < c || hk.Count-hk.Error > c) {
			t.Errorf("%s: estimate %d (error %d), true %d: want count-error <= true <= count", key, hk.Count, hk.Error, c)
		}
	}
	// The hottest key is tenant-0 on one of the endpoints, first in the report.
	if top := rep.Keys[0]; top.Key != HashKey("tenant-0") || top.Share < 0.1 {
		t.Errorf("top key %+v, want tenant-0's hash with a large share", top)
	}
}

// TestHotKeysHTTP: the gateway counts what it decides and serves the sketch hashed: the hot
// tenant's hash is first, and no API key appears in the body.
func TestHotKeysHTTP(t *testing.T) {
	t.Parallel()
	srv, err := NewServer("127.0.0.1:0", limiter.Noop{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	keys := []string{"secret-hot-key", "secret-cold-1", "secret-cold-2"}
	var wg sync.WaitGroup
	for i := range 60 {
		key := keys[0]
		if i%4 == 3 {
			key = keys[1+(i/4)%2]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			get(t, ts.URL+"/orders", HeaderAPIKey, key)
		}()
	}
	wg.Wait()
	resp, body := get(t, ts.URL+HotKeysPath)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s", HotKeysPath, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var rep HotKeysReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	if rep.Requests != 60 || len(rep.Keys) != 3 || rep.Keys[0].Key != HashKey(keys[0]) || rep.Keys[0].Count != 45 || rep.Keys[0].Endpoint != "orders" {
		t.Errorf("report %+v: want 60 requests, 3 keys, the hot key's hash first with 45 on orders", rep)
	}
	for _, k := range keys {
		if strings.Contains(body, k) {
			t.Errorf("the report shows the API key %q: %s", k, body)
		}
	}
}

func BenchmarkHotKeysObserve(b *testing.B) {
	h := NewHotKeys(DefaultHotKeys)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, 99_999)
	tenants := make([]string, 4096)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("tenant-%d", zipf.Uint64())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		h.Observe(tenants[i%len(tenants)], "read")
	}
}
