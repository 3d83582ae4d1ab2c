package gubernator_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"ratelab/cluster/clustertest"
	"ratelab/cluster/gubernator"
	"ratelab/limiter"
)

// start starts a real cluster of n daemons (bin/gubernatord: `make gubernator`) and stops it
// when the test ends.
func start(t *testing.T, n int) *gubernator.Cluster {
	t.Helper()
	if _, err := gubernator.FindBinary(); err != nil {
		t.Fatalf("%v", err)
	}
	c, err := gubernator.Start(context.Background(), gubernator.Options{Daemons: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// TestClusterAgreesOnAKey asks a 3-daemon cluster round robin for one key, in batching and in
// global behaviour: batching forwards every request to the key's owner, so the burst is spent
// exactly once; the partition of the owner's peers then turns the forwarded requests into errors
// while the daemon itself still answers.
func TestClusterAgreesOnAKey(t *testing.T) {
	c := start(t, 3)
	l := limiter.GubernatorLimit{Algorithm: limiter.GubernatorLeakyBucket, Behavior: limiter.GubernatorBatching, Limit: 1, Burst: 6, Duration: time.Hour}
	g, err := limiter.NewGubernator(c.HTTPAddrs(), l, limiter.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	allowed := 0
	for range 12 {
		d, err := g.Allow(ctx, limiter.Request{Tenant: t.Name(), Endpoint: "e", Cost: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	if allowed != 6 {
		t.Fatalf("batching: %d of 12 allowed through 3 daemons, want the burst of 6: the daemons do not share the key's owner", allowed)
	}
	// Every daemon cut off its peers: of 3 round-robin requests at most one reaches the owner
	// locally, the others fail to forward.
	for i := range 3 {
		if err := c.Partition(i); err != nil {
			t.Fatal(err)
		}
	}
	var errs int
	for range 3 {
		if _, err := g.Allow(ctx, limiter.Request{Tenant: t.Name(), Endpoint: "e", Cost: 1}); err != nil {
			errs++
		}
	}
	c.Heal()
	if errs != 2 {
		t.Fatalf("partitioned: %d of 3 requests failed, want 2 (the two daemons that do not own the key)", errs)
	}
}

// TestKillPauseRestart checks the process faults on real daemons.
func TestKillPauseRestart(t *testing.T) {
	c := start(t, 2)
	pid := c.Pids()[1]
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	if clustertest.Alive(pid) || c.Pids()[1] != 0 {
		t.Fatalf("daemon 1 (pid %d) survived Kill", pid)
	}
	if err := c.Pause(1); err == nil {
		t.Fatal("Pause of a killed daemon: no error")
	}
	if err := c.Restart(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestDaemonsDieWithRatelab starts a cluster in a child process (this test binary), then kills
// the child with SIGKILL, as a crash or an interrupted run that never reaches Close: every
// daemon must die with it (Pdeathsig from the spawner's thread).
func TestDaemonsDieWithRatelab(t *testing.T) {
	if os.Getenv("RATELAB_GUBER_CHILD") == "1" {
		c, err := gubernator.Start(context.Background(), gubernator.Options{Daemons: 3})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("pids", strings.Trim(fmt.Sprint(c.Pids()), "[]"))
		time.Sleep(time.Minute)
		return
	}
	if _, err := gubernator.FindBinary(); err != nil {
		t.Fatalf("%v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDaemonsDieWithRatelab$")
	cmd.Env = append(os.Environ(), "RATELAB_GUBER_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "pids "); ok {
			for _, p := range strings.Fields(f) {
				n, _ := strconv.Atoi(p)
				pids = append(pids, n)
			}
			break
		}
		t.Log(sc.Text())
	}
	if len(pids) != 3 {
		_ = cmd.Process.Kill()
		t.Fatalf("child reported pids %v, want 3", pids)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		for clustertest.Alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("daemon pid %d outlived its killed parent", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
