package cluster

import "os/exec"

// StartChild starts cmd as a node of this package is started: from the spawner's locked OS
// thread (spawner.go), in its own process group, and on Linux with Pdeathsig SIGKILL, so that it
// dies with ratelab even when ratelab is killed. It is for the other daemons ratelab runs under
// test (package cluster/gubernator): one spawner, one set of process attributes. cmd's standard
// streams must be nil or *os.File; cmd.SysProcAttr is replaced. The caller waits for cmd.
func StartChild(cmd *exec.Cmd) error {
	cmd.SysProcAttr = sysProcAttr(false)
	return spawn(cmd)
}
