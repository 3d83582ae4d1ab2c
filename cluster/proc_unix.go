//go:build unix && !linux

package cluster

import (
	"errors"
	"os"
	"syscall"
)

// pdeathsig reports whether nodes die with their parent; only Linux has Pdeathsig, so elsewhere
// nodes survive a SIGKILL of ratelab (Close and signal-driven shutdown still stop them).
const pdeathsig = false

// sysProcAttr puts a node in its own process group (or its own session when detached).
func sysProcAttr(detached bool) *syscall.SysProcAttr {
	if detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// processAlive reports whether pid exists (zombies included: there is no portable /proc).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// processIsNode reports whether pid is alive; without /proc the title cannot be checked.
func processIsNode(pid int, _ string) bool { return processAlive(pid) }

// sigPause and sigResume implement Pause and Resume.
var sigPause, sigResume os.Signal = syscall.SIGSTOP, syscall.SIGCONT
