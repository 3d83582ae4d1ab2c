//go:build linux

package cluster

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// pdeathsig reports whether nodes die with their parent (Linux Pdeathsig).
const pdeathsig = true

// sysProcAttr puts a node in its own process group so that a terminal Ctrl-C reaches only
// ratelab, and asks the kernel to SIGKILL the node when the thread that forked it exits. The fork
// must therefore come from the spawner's locked thread (spawner.go). A detached node gets its own
// session instead and no death signal.
func sysProcAttr(detached bool) *syscall.SysProcAttr {
	if detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// processAlive reports whether pid exists and is not a zombie (a zombie has exited but was not
// reaped yet, e.g. when its new parent, a container's PID 1, never reaps).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// Format: "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	return stat[i+2] != 'Z'
}

// processIsNode reports whether pid is alive and is the redis-server listening on addr. Redis sets
// its process title to "redis-server 127.0.0.1:PORT [cluster]"; checking it keeps Stop from killing
// an unrelated process that reused a recorded pid.
func processIsNode(pid int, addr string) bool {
	if !processAlive(pid) {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(addr)) || bytes.Contains(cmdline, []byte("redis-server"))
}

// sigPause and sigResume implement Pause and Resume.
var sigPause, sigResume os.Signal = syscall.SIGSTOP, syscall.SIGCONT
