//go:build linux

package cluster

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpawnSurvivesCallerThreadExit pins the spawner design: a child started with Pdeathsig from a
// goroutine whose OS thread then exits must not be killed. Had spawn forked on the caller's
// (locked, dying) thread, the kernel would send the child SIGKILL when that thread exits.
func TestSpawnSurvivesCallerThreadExit(t *testing.T) {
	t.Parallel()
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatalf("this test needs `sleep` on PATH: %v", err)
	}
	for attempt := 0; ; attempt++ {
		type result struct {
			cmd *exec.Cmd
			err error
			tid int
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the runtime ends this thread when we return
			cmd := exec.Command(sleepBin, "60")
			cmd.SysProcAttr = sysProcAttr(false)
			err := spawn(cmd)
			ch <- result{cmd, err, syscall.Gettid()}
		}()
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		pid := r.cmd.Process.Pid
		done := make(chan struct{})
		go func() { _ = r.cmd.Wait(); close(done) }()
		stop := func() { _ = r.cmd.Process.Kill(); <-done }
		if r.tid == os.Getpid() {
			// The goroutine ran on the main thread, which the runtime parks instead of ending.
			stop()
			if attempt > 20 {
				t.Fatal("the locked goroutine kept landing on the main thread")
			}
			continue
		}
		t.Cleanup(stop)
		// The kernel sends Pdeathsig in exit_notify, before the thread leaves /proc/self/task;
		// once it is gone, a SIGKILL for the child would already be pending or delivered.
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(r.tid)); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("thread %d did not exit", r.tid)
			}
			time.Sleep(2 * time.Millisecond) // polling a bounded condition
		}
		select {
		case <-done:
			t.Fatalf("child pid %d died when the thread of the goroutine that asked for it exited", pid)
		default:
		}
		if !processAlive(pid) || killPending(t, pid) {
			t.Fatalf("child pid %d was killed when the thread of the goroutine that asked for it exited", pid)
		}
		return
	}
}

// killPending reports whether SIGKILL is pending for pid (bit 9-1 of SigPnd or ShdPnd in
// /proc/PID/status); a process that has exited counts as killed.
func killPending(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return true
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "SigPnd" && k != "ShdPnd") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			t.Fatalf("parse %s %q: %v", k, v, err)
		}
		if mask&(1<<(uint(syscall.SIGKILL)-1)) != 0 {
			return true
		}
	}
	return false
}
