package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRunExternalClusterFlags runs the binary as a user would: a fault scenario against an
// external cluster is refused before any connection, naming --allow-faults, and a URL holding a
// password is refused without echoing it.
func TestRunExternalClusterFlags(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(binary, append([]string{"run", "--out", t.TempDir(), "-q"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Nothing listens on port 1: a refusal that tried to connect would fail differently.
	out, err := run("primary-failover", "--duration", "20s", "--cluster", "redis://127.0.0.1:1")
	if err == nil || !strings.Contains(out, "--allow-faults") || !strings.Contains(out, "kill-primary") {
		t.Errorf("fault scenario on an external cluster: err %v, output:\n%s\nwant a refusal naming kill-primary and --allow-faults", err, out)
	}
	out, err = run("smoke", "--duration", "2s", "--cluster", "redis://app:pw-on-argv-123@127.0.0.1:1")
	if err == nil || strings.Contains(out, "pw-on-argv-123") || !strings.Contains(out, "RATELAB_REDIS_PASSWORD") {
		t.Errorf("password in the URL: err %v, output:\n%s\nwant a refusal pointing at $RATELAB_REDIS_PASSWORD, without the password", err, out)
	}
	out, err = run("smoke", "--duration", "2s", "--cluster", "docker", "--docker-image", "bad image")
	if err == nil || !strings.Contains(out, "Image") {
		t.Errorf("--docker-image with a space: err %v, output:\n%s\nwant an invalid-image error", err, out)
	}
}
