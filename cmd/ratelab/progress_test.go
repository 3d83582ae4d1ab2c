package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// plainLine is a live-progress line of a non-terminal run of 3 s at 1000/s.
var plainLine = regexp.MustCompile(`^  ([123])\.0s/3\.0s  offered 1000/s achieved \d+/s  p99 [0-9.]+ ms  errors 0  overspend \d+$`)

// A run whose stderr is a pipe prints one plain progress line per second there (no bar, no
// carriage returns), the summary on stdout; --quiet leaves only the log lines.
func TestRunProgressPlainLines(t *testing.T) {
	t.Parallel()
	for _, quiet := range []bool{false, true} {
		args := []string{"run", "ci-smoke", "--limiter", "memory", "--duration", "3s", "--out", filepath.Join(t.TempDir(), "run")}
		if quiet {
			args = append(args, "--quiet")
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(binary, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("ratelab %v: %v\n%s", args, err, stderr.String())
		}
		if strings.Contains(stderr.String(), "\r") {
			t.Errorf("quiet=%v: stderr of a non-terminal run has carriage returns (a bar): %q", quiet, stderr.String())
		}
		var secs []string
		for _, l := range strings.Split(stderr.String(), "\n") {
			if m := plainLine.FindStringSubmatch(l); m != nil {
				secs = append(secs, m[1])
			} else if l != "" && !strings.HasPrefix(l, "ratelab: ") {
				t.Errorf("quiet=%v: unexpected stderr line %q", quiet, l)
			}
		}
		want := "1 2 3"
		if quiet {
			want = ""
		}
		if have := strings.Join(secs, " "); have != want {
			t.Errorf("quiet=%v: progress lines for seconds %q, want %q:\n%s", quiet, have, want, stderr.String())
		}
		if !strings.Contains(stdout.String(), "ci-smoke — completed") || strings.Contains(stdout.String(), "offered 1000/s achieved") {
			t.Errorf("quiet=%v: stdout should hold the summary and no progress:\n%s", quiet, stdout.String())
		}
	}
}

// On a terminal (a pseudo-terminal from script(1)) the progress is a bar redrawn between the
// per-second rows, ending in the final status as a line.
func TestRunProgressBarOnTerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed: no pseudo-terminal to run on")
	}
	out := filepath.Join(t.TempDir(), "run")
	typescript := filepath.Join(t.TempDir(), "typescript")
	// stdout goes to /dev/null so only stderr (the progress) is on the terminal.
	line := binary + " run ci-smoke --limiter memory --duration 3s --out " + out + " >/dev/null"
	cmd := exec.Command(script, "-qfec", line, typescript)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script -c %q: %v\n%s", line, err, b)
	}
	b, err := exec.Command("cat", typescript).Output()
	if err != nil {
		t.Fatal(err)
	}
	tty := string(b)
	// Redraws: the bar's status with a fraction of a second, between the rows.
	between := regexp.MustCompile(`\r +\d+% \|[^|]*\|  [0-2]\.[1-9]s/3\.0s  `)
	if n := len(between.FindAllString(tty, -1)); n < 3 {
		t.Errorf("%d redraws of the bar between rows, want several a second:\n%q", n, tty)
	}
	if !regexp.MustCompile(`\r  3\.0s/3\.0s  offered 1000/s achieved \d+/s  p99 [0-9.]+ ms  errors 0  overspend \d+\r?\n`).MatchString(tty) {
		t.Errorf("no final status line after the bar:\n%q", tty)
	}
}
