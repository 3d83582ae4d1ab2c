package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/limiter/gateway"
	"ratelab/results"
)

func TestAttackRefusesBadFlags(t *testing.T) {
	t.Parallel()
	keysFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keysFile, []byte("key-one\nkey-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--url", "http://10.1.2.3:8080/"}, []string{"loopback", "--allow-remote"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--policy", "rate=x,burst=1"}, []string{"--policy", `rate "x"`, "rate=50"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--pacer", "zigzag"}, []string{`pacer "zigzag"`, "constant or poisson"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--trace", "/nonexistent.trace"}, []string{"--trace", "no such file"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--body", "x", "--body-file", "/etc/hostname"}, []string{"--body and --body-file", "not both"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--key-format", "Bearer"}, []string{`key format "Bearer"`, "{key}"}},
		{[]string{"--url", "http://127.0.0.1:1/", "-H", "NoColon"}, []string{"-H", `"NoColon"`, "Name: value"}},
		{[]string{"--url", "http://127.0.0.1:1/", "-H", "Bad Name: x"}, []string{"-H", "not a header name"}},
		{[]string{"--url", "http://127.0.0.1:1/", "-H", "X-API-Key: k"}, []string{"header X-Api-Key", "ratelab sets it"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--method", "GE T"}, []string{`method "GE T"`, "GET, POST"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--policy", "limit=0,window=1s"}, []string{"--policy", `limit "0"`, "limit=100"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--ca", "/nonexistent.pem"}, []string{"--ca", "no such file"}},
		{[]string{"--url", "http://127.0.0.1:1/", "--tenants", "5", "--keys-file", keysFile}, []string{"--keys-file", "2 keys", "--tenants is 5", "drop --tenants"}},
		{[]string{"--url", "https://10.1.2.3/"}, []string{"loopback", "--allow-remote"}},
	} {
		out, err := exec.Command(binary, append([]string{"attack", "-q"}, tc.args...)...).CombinedOutput()
		if code := exitCode(err); code != 1 {
			t.Errorf("attack %v: exit %d, want 1; output %q", tc.args, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("attack %v: output %q lacks %q", tc.args, out, w)
			}
		}
	}
}

// `ratelab trace gen`, `trace info` and `attack --trace` as a user runs them, against the
// gateway's middleware on loopback: the run directory has the report and vegeta's results.
func TestAttackReplaysGeneratedTrace(t *testing.T) {
	t.Parallel()
	policy := limiter.BucketPolicy{Rate: 10, Burst: 5}
	tb, err := limiter.NewTokenBucket(policy)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.NewServer("127.0.0.1:0", tb, nil, gateway.WithPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "gen.trace")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ratelab %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("trace", "gen", "--rate", "300", "--duration", "1s", "--tenants", "10", "--endpoints", "search:3,read:1", "--file", tracePath)
	if info := run("trace", "info", tracePath); !strings.Contains(info, "requests   300 ") || !strings.Contains(info, "[search read]") {
		t.Errorf("trace info:\n%s", info)
	}
	out := filepath.Join(dir, "run")
	text := run("attack", "-q", "--url", "http://"+ln.Addr().String()+"/", "--trace", tracePath, "--speed", "2",
		"--policy", "rate=10,burst=5", "--out", out)
	for _, f := range []string{"report.html", "results.bin", results.SummaryFile, results.TimeseriesFile, "latency.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s: %v\n%s", f, err, text)
		}
	}
	sum, err := results.ReadSummary(filepath.Join(out, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Load.Completed != 300 || sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 {
		t.Errorf("decisions %d allowed %d denied %d; want all 300 answered, some 429\n%s",
			sum.Load.Completed, sum.Outcomes.Allowed, sum.Outcomes.Denied, text)
	}
	if !strings.Contains(text, "vegeta report") {
		t.Errorf("the summary does not say how to read results.bin:\n%s", text)
	}
}

// `ratelab attack --slo` against an HTTP server on loopback: a passing check exits 0 and prints
// (with -o json, alone on stdout) the summary whose SLO holds the check; a failing one exits 3
// and writes its verdict into summary.json. The old --workers still sets the workers and says
// its new name on stderr.
func TestAttackSLO(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	attack := func(out string, args ...string) (int, string, string) {
		t.Helper()
		return execRatelab(t, dir, append([]string{"attack", "-q", "--url", srv.URL + "/", "--rate", "200", "--duration", "1s",
			"--tenants", "10", "--policy", "rate=1000,burst=1000", "--out", filepath.Join(dir, out)}, args...)...)
	}

	code, stdout, stderr := attack("pass", "--slo", "error_ratio=0.01", "--slo", "achieved_ratio=0.5", "-o", "json", "--concurrency", "4")
	if code != 0 {
		t.Fatalf("passing SLO: exit %d, want 0\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	var sum results.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("-o json: stdout is not one summary: %v\n%s", err, stdout)
	}
	if !sum.SLO.Pass || len(sum.SLO.Checks) != 2 {
		t.Errorf("passing SLO: %+v; want 2 checks, passed", sum.SLO)
	}

	code, stdout, stderr = attack("fail", "--slo", "p99_ms=0")
	if code != exitSLOFailed {
		t.Fatalf("failing SLO: exit %d, want %d\nstdout %s\nstderr %s", code, exitSLOFailed, stdout, stderr)
	}
	if !strings.Contains(stderr, "SLO failed: p99_ms <= 0") {
		t.Errorf("failing SLO: stderr does not name the check:\n%s", stderr)
	}
	got, err := results.ReadSummary(filepath.Join(dir, "fail", results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if got.SLO.Pass || len(got.SLO.Checks) != 1 || got.SLO.Checks[0].Pass {
		t.Errorf("summary.json SLO %+v; want the one p99 check failed", got.SLO)
	}

	code, _, stderr = attack("bad", "--slo", "error_ratio=2")
	if code != 1 || !strings.Contains(stderr, "--slo error_ratio=2") || !strings.Contains(stderr, "between 0 and 1") {
		t.Errorf("--slo error_ratio=2: exit %d, stderr %q; want 1 and the limit named with its fix", code, stderr)
	}
}
