package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// TestDemoQuick runs `ratelab demo --quick` end to end on real local clusters: every step leaves
// a summary.json per run with decisions in it, and index.html links only files that exist.
func TestDemoQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts seven local Redis Clusters")
	}
	out := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "demo", "--quick", "-q", "--out", out)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ratelab demo --quick: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "4 of 4 steps") {
		t.Errorf("demo did not report 4 finished steps:\n%s", got)
	}
	runs, err := filepath.Glob(filepath.Join(out, "*", results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 7 {
		t.Fatalf("%d summaries under %s, want 7 (one per run of the 4 steps)", len(runs), out)
	}
	for _, p := range runs {
		s, err := results.ReadSummary(p)
		if err != nil {
			t.Fatal(err)
		}
		if s.Load.Decisions == 0 {
			t.Errorf("%s: no decisions", p)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`(?:href|src)="([^"]+)"`).FindAllStringSubmatch(string(page), -1)
	var svgs int
	for _, l := range links {
		u := l[1]
		if strings.Contains(u, "://") || strings.HasPrefix(u, "/") {
			t.Errorf("index link %q is not relative", u)
			continue
		}
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(u))); err != nil {
			t.Errorf("index link %q does not resolve: %v", u, err)
		}
		if strings.HasSuffix(u, ".svg") {
			svgs++
		}
	}
	if svgs < 7 {
		t.Errorf("index shows %d SVG plot links, want at least one per run (7)", svgs)
	}
}

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
