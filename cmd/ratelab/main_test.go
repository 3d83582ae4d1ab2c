package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ratelab/results"
)

// binary is ratelab built once for the tests that run it as a user would.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ratelab-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "ratelab")
	// -buildvcs=auto: as `go install` builds by default (a GOFLAGS=-buildvcs=false in the
	// environment would otherwise leave the commit out), so that `ratelab version` is tested
	// on what users build.
	out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building ratelab: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// redisChildren returns the pids of redis-server processes whose parent is pid.
func redisChildren(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < 0 || !strings.HasPrefix(s[open+1:close], "redis-server") {
			continue
		}
		fields := strings.Fields(s[close+1:])
		if len(fields) > 2 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie is dead for our purpose: read its state.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// syncBuffer is a bytes.Buffer safe to read while a child process writes into it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRun starts `ratelab run smoke` and waits until its 6 redis-server nodes are up and the
// schedule is running. It returns the command, the nodes' pids and the run directory.
func startRun(t *testing.T, duration string) (*exec.Cmd, *syncBuffer, []int, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(binary, "run", "smoke", "--duration", duration, "--out", out, "-q")
	buf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(60 * time.Second)
	var pids []int
	for time.Now().Before(deadline) {
		pids = redisChildren(t, cmd.Process.Pid)
		if len(pids) == 6 && strings.Contains(buf.String(), "running smoke") {
			return cmd, buf, pids, out
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("ratelab did not start 6 redis-server nodes and the run within 60 s (saw %v); output:\n%s", pids, buf.String())
	return nil, nil, nil, ""
}

// waitRows waits until the run in out has flushed at least one interval row to timeseries.csv
// and returns how many it has. A fixed sleep is not enough: on a slow, shared CI machine the
// first second can take longer than any sleep chosen here, and a signal sent before then tests
// nothing about what an interrupted run keeps.
func waitRows(t *testing.T, out string, buf *syncBuffer) int {
	t.Helper()
	path := filepath.Join(out, results.TimeseriesFile)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if f, err := os.Open(path); err == nil {
			// A row still being written reads as ErrTruncated; the rows before it count.
			rows, _ := results.ReadTimeseries(f)
			f.Close()
			if len(rows) > 0 {
				return len(rows)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s has no interval row 30 s into the run; output:\n%s", path, buf.String())
	return 0
}

func waitGone(t *testing.T, pids []int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		left := 0
		for _, p := range pids {
			if alive(p) {
				left++
			}
		}
		if left == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	var left []int
	for _, p := range pids {
		if alive(p) {
			left = append(left, p)
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	t.Errorf("redis-server processes %v outlived ratelab by %v", left, within)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestRunLeavesNoRedisBehind(t *testing.T) {
	t.Run("normal end", func(t *testing.T) {
		t.Parallel()
		cmd, buf, pids, out := startRun(t, "2s")
		if err := cmd.Wait(); err != nil {
			t.Fatalf("ratelab run: %v\n%s", err, buf.String())
		}
		waitGone(t, pids, 2*time.Second)
		sum, err := results.ReadSummary(filepath.Join(out, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Interrupted || sum.Load.Completed == 0 {
			t.Errorf("summary %+v: want a completed run with decisions", sum.Load)
		}
		for _, want := range []string{"achieved", "offered", "p99", "overspend", "allowed", "report.html"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, buf.String())
			}
		}
		if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
			t.Errorf("no report: %v", err)
		}
	})
	t.Run("ctrl-c", func(t *testing.T) {
		t.Parallel()
		cmd, buf, pids, out := startRun(t, "60s")
		waitRows(t, out, buf)
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if code := exitCode(err); code != exitInterrupted {
			t.Errorf("exit code %d, want %d after Ctrl-C\n%s", code, exitInterrupted, buf.String())
		}
		waitGone(t, pids, 2*time.Second)
		sum, err := results.ReadSummary(filepath.Join(out, results.SummaryFile))
		if err != nil {
			t.Fatalf("an interrupted run must leave its summary: %v\n%s", err, buf.String())
		}
		if !sum.Interrupted || sum.Load.Completed == 0 || sum.DurationS > 30 {
			t.Errorf("summary interrupted=%v decisions=%d duration=%v: want the partial run marked interrupted", sum.Interrupted, sum.Load.Completed, sum.DurationS)
		}
	})
	t.Run("sigkill", func(t *testing.T) {
		t.Parallel()
		cmd, buf, pids, out := startRun(t, "60s")
		before := waitRows(t, out, buf)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		waitGone(t, pids, 5*time.Second)
		// Rows are flushed as the run goes: a killed run keeps every second it had written.
		data, err := os.ReadFile(filepath.Join(out, results.TimeseriesFile))
		if err != nil {
			t.Fatal(err)
		}
		if rows, err := results.ReadTimeseries(bytes.NewReader(data)); len(rows) < before {
			t.Errorf("timeseries.csv of a killed run has %d rows, %d were there before the kill (err %v):\n%s", len(rows), before, err, data)
		}
	})
}

func TestBadInputNamesTheField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nload: {rate: -1}\ntenants: {count: 10}\npolicy: {rate: 1, burst: 0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"run", bad}, []string{"bad.yaml:2: load.rate: -1", "bad.yaml:4: policy.burst: 0"}},
		{[]string{"run", "smoke", "--rate", "0"}, []string{"load.rate: 0: must be > 0"}},
		{[]string{"run", "smoke", "--limiter", "magic"}, []string{`limiter.kind: "magic"`}},
		{[]string{"run", "smoke", "--transport", "fast"}, []string{`limiter.transport: "fast"`, "use plain"}},
		{[]string{"run", "hot-tenant", "--limiter", "lease", "--transport", "coalesce"}, []string{"limiter.transport: coalesce", "only limiter.kind token-bucket"}},
		{[]string{"run", "smoke", "--design", "split"}, []string{"--design/--period: scenario smoke has no regions"}},
		{[]string{"run", "regions-rebalance", "--design", "split", "--period", "2s"}, []string{"regions.period: 2s: only design rebalance has a period"}},
		{[]string{"run", "nonexistent"}, []string{`no built-in scenario "nonexistent"`, "hot-tenant"}},
	}
	for _, tt := range tests {
		out, err := exec.Command(binary, tt.args...).CombinedOutput()
		if code := exitCode(err); code != 1 {
			t.Errorf("ratelab %v: exit %d, want 1\n%s", tt.args, code, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("ratelab %v output lacks %q:\n%s", tt.args, w, out)
			}
		}
	}
}

// TestClusterUpStatusDown drives `ratelab cluster` as a user would: a detached cluster survives
// the command that started it, status reports it, a second up is refused, down stops every node.
func TestClusterUpStatusDown(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "cluster.json")
	run := func(args ...string) (string, int) {
		out, err := exec.Command(binary, append(append([]string{"cluster"}, args...), "--state", state)...).CombinedOutput()
		return string(out), exitCode(err)
	}
	out, code := run("up", "--primaries", "2", "--replicas", "0")
	if code != 0 {
		t.Fatalf("cluster up: exit %d\n%s", code, out)
	}
	t.Cleanup(func() { run("down") })
	var st struct {
		Nodes []struct {
			Pid int `json:"pid"`
		} `json:"nodes"`
	}
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatalf("no state file after up: %v", err)
	}
	if err := json.Unmarshal(data, &st); err != nil || len(st.Nodes) != 2 {
		t.Fatalf("state file %s: %v\n%s", state, err, data)
	}
	var pids []int
	for _, n := range st.Nodes {
		if !alive(n.Pid) {
			t.Errorf("node pid %d is not running after `cluster up` returned", n.Pid)
		}
		pids = append(pids, n.Pid)
	}
	if out, code := run("status"); code != 0 || !strings.Contains(out, "cluster_state") && !strings.Contains(out, "ok") {
		t.Errorf("cluster status: exit %d\n%s", code, out)
	}
	if out, code := run("up"); code == 0 {
		t.Errorf("a second cluster up succeeded, want it refused:\n%s", out)
	}
	if out, code := run("down"); code != 0 {
		t.Errorf("cluster down: exit %d\n%s", code, out)
	}
	waitGone(t, pids, 5*time.Second)
	if out, code := run("status"); code == 0 {
		t.Errorf("cluster status after down: exit 0, want an error\n%s", out)
	}
}
