package cluster

import (
	"os/exec"
	"runtime"
	"sync"
)

// The spawner is one goroutine, started on first use and never ended, that locks its OS thread and
// runs every exec.Cmd.Start of this process's nodes.
//
// Why: Linux Pdeathsig is delivered when the *thread* that forked the child exits, not the
// process. The Go scheduler moves goroutines between threads and ends threads whose locked
// goroutine returns, so a node forked from an arbitrary goroutine would be SIGKILLed at a random
// moment. Forking only from a thread that lives as long as the process makes Pdeathsig mean
// "when ratelab dies". The thread is parked in a channel receive between requests; it costs one
// OS thread and no CPU.
type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan<- error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

// spawn starts cmd from the spawner's locked thread and returns cmd.Start's error. cmd's standard
// streams must be nil or *os.File so that Start does not hand copying to other goroutines (it would
// be harmless, but nothing here needs it).
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go spawner(spawnCh)
	})
	errc := make(chan error, 1)
	spawnCh <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
}

// spawner never returns and never unlocks its thread: both would let the runtime end or reuse the
// thread that is the parent of every node.
func spawner(reqs <-chan spawnRequest) {
	runtime.LockOSThread()
	for r := range reqs {
		r.errc <- r.cmd.Start()
	}
}
