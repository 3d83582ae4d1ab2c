package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/results"
)

// --policy limit=N,window=W judges against a sliding window: a target that allows everything
// overspends it, and the summary's note names the window.
func TestAttackWindowPolicy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	code, stdout, stderr := execRatelab(t, dir, "attack", "-q", "--url", srv.URL+"/", "--rate", "100", "--duration", "1s",
		"--tenants", "2", "--policy", "limit=5,window=1s", "-o", "json", "--out", filepath.Join(dir, "run"))
	if code != 0 {
		t.Fatalf("exit %d\nstderr %s", code, stderr)
	}
	var sum results.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	// 2 tenants x 5 in the one second: about 90 of the 100 allowed are overspend.
	if sum.Overspend.Requests < 80 || !strings.Contains(sum.Load.Note, "sliding window limit=5,window=1s") {
		t.Errorf("overspend %d of %d allowed, note %q; want about 90 and the window named", sum.Overspend.Requests, sum.Outcomes.Allowed, sum.Load.Note)
	}
}
