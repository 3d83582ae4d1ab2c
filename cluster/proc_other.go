//go:build !unix

package cluster

import (
	"os"
	"syscall"
)

// pdeathsig is false: only Linux ties a child's life to its parent.
const pdeathsig = false

// sysProcAttr has nothing to set on this platform; redis-server does not run natively here anyway.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// processAlive reports whether pid can be found.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.FindProcess(pid)
	return err == nil
}

// processIsNode reports whether pid is alive.
func processIsNode(pid int, _ string) bool { return processAlive(pid) }

// sigPause and sigResume have no meaning here; signalling them fails.
var sigPause, sigResume os.Signal = syscall.Signal(0x13), syscall.Signal(0x12)
