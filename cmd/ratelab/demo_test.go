package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoInterrupt sends Ctrl-C once the first step is done: the demo stops with exit code 130
// and its index lists the finished steps.
func TestDemoInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts local Redis Clusters")
	}
	out := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(binary, "demo", "--quick", "-q", "--out", out)
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	index := filepath.Join(out, "index.html")
	deadline := time.After(3 * time.Minute)
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("demo ended before it was interrupted: %v\n%s", err, buf.String())
		case <-deadline:
			t.Fatalf("no index.html after 3 minutes:\n%s", buf.String())
		case <-time.After(100 * time.Millisecond):
			if _, err := os.Stat(index); err == nil {
				break wait
			}
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("demo did not stop within 3 minutes of Ctrl-C:\n%s", buf.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want code %d\n%s", err, exitInterrupted, buf.String())
	}
	page, rerr := os.ReadFile(index)
	if rerr != nil {
		t.Fatal(rerr)
	}
	n := strings.Count(string(page), "<section>")
	if n < 1 || n > 3 {
		t.Errorf("index lists %d steps after an interrupt, want 1 to 3", n)
	}
	if !strings.Contains(string(page), "boundary burst") {
		t.Errorf("index lacks the finished first step")
	}
}
