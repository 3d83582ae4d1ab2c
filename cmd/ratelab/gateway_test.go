package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestGatewayRefusesRemoteListen(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:8080", ":8080"} {
		out, err := exec.Command(binary, "gateway", "--listen", addr, "-q").CombinedOutput()
		if code := exitCode(err); code != 1 || !strings.Contains(string(out), "loopback-only") || !strings.Contains(string(out), "--allow-remote") {
			t.Errorf("gateway --listen %s: exit %d output %q, want exit 1 naming loopback-only and --allow-remote", addr, code, out)
		}
	}
}

// TestGatewayServesAndStops runs `ratelab gateway` as a user would: it starts its cluster,
// answers 200 then 429 on a real port, and on SIGINT exits 0 and leaves no redis-server behind.
func TestGatewayServesAndStops(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "gateway", "--listen", "127.0.0.1:0", "--policy", "rate=0.1,burst=1", "--decision-timeout", "1s")
	buf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	addrRe := regexp.MustCompile(`gateway on (http://127\.0\.0\.1:\d+)`)
	var url string
	for deadline := time.Now().Add(60 * time.Second); url == "" && time.Now().Before(deadline); {
		if m := addrRe.FindStringSubmatch(buf.String()); m != nil {
			url = m[1]
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if url == "" {
		t.Fatalf("ratelab gateway did not report its address within 60 s; output:\n%s", buf.String())
	}
	pids := redisChildren(t, cmd.Process.Pid)
	if len(pids) == 0 {
		t.Fatalf("no redis-server child of the gateway; output:\n%s", buf.String())
	}
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		req, _ := http.NewRequest(http.MethodGet, url+"/search/q", nil)
		req.Header.Set("X-API-Key", "cli-tenant")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("request %d: status %d body %q, want %d", i+1, resp.StatusCode, body, want)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(cmd.Wait()); code != 0 {
		t.Errorf("exit code %d after SIGINT, want 0; output:\n%s", code, buf.String())
	}
	waitGone(t, pids, 5*time.Second)
}

// TestGatewayRefusesUnknownCluster: a --cluster other than local or running fails before any
// redis-server starts, naming both choices.
func TestGatewayRefusesUnknownCluster(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary, "gateway", "--cluster", "docker", "-q").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), `"local"`) || !strings.Contains(string(out), `"running"`) {
		t.Errorf("gateway --cluster docker: exit %d output %q, want exit 1 naming local and running", code, out)
	}
}

// TestGatewayRunningNeedsACluster: --cluster running with no recorded cluster fails and says
// how to start one.
func TestGatewayRunningNeedsACluster(t *testing.T) {
	t.Parallel()
	state := t.TempDir() + "/none.json"
	out, err := exec.Command(binary, "gateway", "--cluster", "running", "--state", state, "-q").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "ratelab cluster up") {
		t.Errorf("gateway --cluster running --state %s: exit %d output %q, want exit 1 naming `ratelab cluster up`", state, code, out)
	}
}
