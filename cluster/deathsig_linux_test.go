//go:build linux

package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
)

// Environment of the helper process: the mode and the parent dir for its cluster.
const (
	helperEnv    = "RATELAB_CLUSTER_HELPER"
	helperDirEnv = "RATELAB_CLUSTER_HELPER_DIR"
	// goneBound is how long the kernel gets to deliver Pdeathsig and end the nodes.
	goneBound = 5 * time.Second
)

// In the helper, pin the main goroutine to the main thread. The runtime never ends the main thread
// (it parks it when a goroutine locked to it returns), so a dying-thread test that happened to
// land there would prove nothing; with the main thread taken, it lands on a thread that exits.
func init() {
	if os.Getenv(helperEnv) != "" {
		runtime.LockOSThread()
	}
}

// TestParentSIGKILLLeavesNoNode re-runs this test binary as a child that starts a cluster, prints
// its node pids and blocks; SIGKILLing the child must take every node down (Pdeathsig).
//
// "thread-exit" starts the cluster from a goroutine that locks its OS thread and returns, so the
// runtime ends that thread, and then makes the runtime end every other idle thread: a node forked
// from any of them would get its Pdeathsig right then. The child checks that those threads are
// gone and every node still answers before it reports the pids.
func TestParentSIGKILLLeavesNoNode(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"direct", "thread-exit"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDirEnv+"="+t.TempDir())
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var pids []int
			t.Cleanup(func() { // never leak nodes, even when the assertion below fails
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			sc := bufio.NewScanner(out)
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
				if rest, ok := strings.CutPrefix(sc.Text(), "PIDS "); ok {
					for _, f := range strings.Fields(rest) {
						pid, err := strconv.Atoi(f)
						if err != nil {
							t.Fatalf("bad pid %q in %q", f, sc.Text())
						}
						pids = append(pids, pid)
					}
					break
				}
			}
			if len(pids) == 0 {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("helper printed no PIDS line; stdout:\n%s\nstderr:\n%s", strings.Join(lines, "\n"), stderr.String())
			}
			for _, pid := range pids {
				if !cluster.ProcessAlive(pid) {
					t.Fatalf("node pid %d not alive before the parent is killed", pid)
				}
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(goneBound)
			for _, pid := range pids {
				for cluster.ProcessAlive(pid) {
					if time.Now().After(deadline) {
						t.Fatalf("node pid %d still alive %v after SIGKILL of its parent", pid, goneBound)
					}
					time.Sleep(10 * time.Millisecond) // polling a bounded condition, not guessing a duration
				}
			}
		})
	}
}

// TestHelperProcess is the child of TestParentSIGKILLLeavesNoNode; it does nothing otherwise.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for TestParentSIGKILLLeavesNoNode")
	}
	opts := cluster.Options{Primaries: 2, Replicas: cluster.NoReplicas, Dir: os.Getenv(helperDirEnv)}
	var l *cluster.Local
	var err error
	switch mode {
	case "direct":
		l, err = cluster.StartLocal(context.Background(), opts)
	case "thread-exit":
		l, err = startFromDyingThread(opts)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	var pids []string
	for _, n := range l.Nodes() {
		pids = append(pids, strconv.Itoa(n.Pid))
	}
	fmt.Println("PIDS " + strings.Join(pids, " "))
	select {} // until SIGKILLed
}

// churnThreads is how many locked goroutines churnThreadsOut runs at once: more than the threads
// a test process has idle, so every idle thread is taken and ended.
const churnThreads = 64

// startFromDyingThread calls StartLocal on a locked thread that the runtime ends right after, then
// ends every other idle thread of the process too (churnThreadsOut), and checks that every node
// still answers PING. A node forked from any thread but the spawner's would be dead by then.
func startFromDyingThread(opts cluster.Options) (*cluster.Local, error) {
	type result struct {
		l   *cluster.Local
		err error
		tid int
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		l, err := cluster.StartLocal(context.Background(), opts)
		ch <- result{l, err, syscall.Gettid()}
	}()
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	if r.tid == os.Getpid() {
		return nil, fmt.Errorf("the starting goroutine ran on the main thread, which never exits")
	}
	if err := waitThreadsGone([]int{r.tid}); err != nil {
		return nil, err
	}
	if err := waitThreadsGone(churnThreadsOut()); err != nil {
		return nil, err
	}
	for _, n := range r.l.Nodes() {
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		err := c.Ping(context.Background()).Err()
		_ = c.Close()
		if err != nil || !cluster.ProcessAlive(n.Pid) {
			return nil, fmt.Errorf("node %s (pid %d) died with a thread of its parent: %v", n.Addr, n.Pid, err)
		}
	}
	return r.l, nil
}

// churnThreadsOut runs churnThreads goroutines that each lock a thread, wait until all are
// running, and return without unlocking, so the runtime ends their threads. The scheduler hands
// them idle threads before it creates new ones, so every idle thread of the process is ended. It
// returns their thread IDs.
func churnThreadsOut() []int {
	tids := make(chan int, churnThreads)
	release := make(chan struct{})
	for range churnThreads {
		go func() {
			runtime.LockOSThread()
			tids <- syscall.Gettid()
			<-release
		}()
	}
	out := make([]int, 0, churnThreads)
	for range churnThreads {
		out = append(out, <-tids)
	}
	close(release)
	return out
}

// waitThreadsGone polls /proc/self/task until none of tids exists, up to goneBound.
func waitThreadsGone(tids []int) error {
	deadline := time.Now().Add(goneBound)
	for _, tid := range tids {
		for {
			if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("thread %d still exists %v after its locked goroutine returned", tid, goneBound)
			}
			time.Sleep(5 * time.Millisecond) // polling a bounded condition
		}
	}
	return nil
}
