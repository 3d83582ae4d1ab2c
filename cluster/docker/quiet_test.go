//go:build linux

package docker_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tclog "github.com/testcontainers/testcontainers-go/log"

	"ratelab/cluster"
	"ratelab/cluster/docker"
)

// tcMarks are texts of testcontainers' log lines: its own name (the Docker engine banner names
// "Testcontainers for Go"), the emoji its lifecycle lines start with, registry auth lookups, and
// the probe TestQuietTestcontainers writes to its default logger.
var tcMarks = []string{"testcontainers", "🐳", "✅", "🔔", "🚫", "⏳", "Creating container", "Container started",
	"No image auth found", "Connected to docker", "ratelab-probe"}

// tcLine returns the first mark of a testcontainers line in text, "" when there is none.
func tcLine(text string) string {
	low := strings.ToLower(text)
	for _, m := range tcMarks {
		if strings.Contains(low, strings.ToLower(m)) {
			return m
		}
	}
	return ""
}

// logLines collects Logf's lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")))
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// captureStdio runs f with this process's file descriptors 1 and 2 pointing into a file and
// returns what was written to them. It redirects the descriptors, not os.Stdout and os.Stderr:
// testcontainers' default logger holds the *os.File it was created with.
func captureStdio(t *testing.T, f func()) string {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "stdio")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var saved [3]int
	for _, fd := range []int{1, 2} {
		if saved[fd], err = syscall.Dup(fd); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Dup3(int(out.Fd()), fd, 0); err != nil {
			t.Fatal(err)
		}
	}
	func() {
		defer func() {
			for _, fd := range []int{1, 2} {
				_ = syscall.Dup3(saved[fd], fd, 0)
				_ = syscall.Close(saved[fd])
			}
		}()
		f()
	}()
	data, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestQuietTestcontainers starts a node with the process's stdout and stderr captured: none of
// testcontainers' lines may reach them or Logf, its default logger included (probed after the
// start). With Debug the same start sends its lines to Logf, prefixed.
func TestQuietTestcontainers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	img := localImage(ctx, t)
	start := func(debug bool, logf func(string, ...any)) error {
		c, err := docker.Start(ctx, docker.Options{Image: img, Debug: debug,
			Cluster: cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Logf: logf}})
		if err != nil {
			return err
		}
		return c.Close()
	}
	var quiet logLines
	var startErr error
	out := captureStdio(t, func() {
		startErr = start(false, quiet.logf)
		tclog.Printf("ratelab-probe: testcontainers' default logger")
	})
	if startErr != nil {
		t.Fatal(startErr)
	}
	if m := tcLine(out); m != "" {
		t.Errorf("testcontainers wrote to stdout/stderr (%q):\n%s", m, out)
	}
	for _, l := range quiet.all() {
		if m := tcLine(l); m != "" {
			t.Errorf("a testcontainers line (%q) reached Logf without Debug: %s", m, l)
		}
	}
	if len(quiet.all()) == 0 {
		t.Error("Logf received nothing: the start's own progress lines are missing")
	}

	var loud logLines
	if err := start(true, loud.logf); err != nil {
		t.Fatal(err)
	}
	var tc []string
	for _, l := range loud.all() {
		if strings.HasPrefix(l, "testcontainers: ") {
			tc = append(tc, l)
		}
	}
	if !strings.Contains(strings.Join(tc, "\n"), "Creating container for image "+img) {
		t.Errorf("with Debug, Logf lacks testcontainers' lines; it has %q", loud.all())
	}
}
