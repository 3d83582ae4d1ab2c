package clustertest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether process pid runs and is not a zombie: what a test asks of a child
// (a Redis node, a gubernator daemon) that must not outlive the run that started it.
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
