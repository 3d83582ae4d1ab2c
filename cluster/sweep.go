package cluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ownerFile, inside a cluster's dir, holds the pid of the process that owns the nodes. Only
// non-detached clusters have one: their nodes die with that process (Pdeathsig), so once it is
// gone the dir is garbage — left behind because a SIGKILL gave Close no chance to run.
const ownerFile = "owner.pid"

// writeOwner records this process as the owner of root.
func writeOwner(root string) error {
	return os.WriteFile(filepath.Join(root, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
}

// sweepStale removes cluster dirs under parent whose owner process no longer runs. Dirs without
// an owner file (detached clusters, or a start in progress in another process) are left alone.
// It returns the removed dirs.
func sweepStale(parent string) []string {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), rootPrefix) {
			continue
		}
		root := filepath.Join(parent, e.Name())
		b, err := os.ReadFile(filepath.Join(root, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if os.RemoveAll(root) == nil {
			removed = append(removed, root)
		}
	}
	return removed
}
