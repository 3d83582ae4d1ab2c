package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func TestSweepStale(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	mk := func(name, owner string) string {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	dead := mk(rootPrefix+"dead", "2147483646\n") // beyond pid_max: never a live process
	mine := mk(rootPrefix+"mine", strconv.Itoa(os.Getpid()))
	parentAlive := mk(rootPrefix+"alive", strconv.Itoa(os.Getppid()))
	detached := mk(rootPrefix+"detached", "")
	garbage := mk(rootPrefix+"garbage", "not a pid")
	other := mk("unrelated", "2147483646")

	have := sweepStale(parent)
	if want := []string{dead}; !slices.Equal(have, want) {
		t.Errorf("sweepStale removed %v, want %v", have, want)
	}
	for _, d := range []string{mine, parentAlive, detached, garbage, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s still exists", dead)
	}
}
