package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"ratelab/results"
)

// hot-tenant coalesces its token bucket's decisions unless --transport plain says otherwise,
// and the summary says which transport was measured; --limiter switches it to another kind
// without a transport error (the coalescing transport is the token bucket's).
func TestTransportFollowsTheKind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags []string
		mode  string
	}{
		{"default", nil, "central, coalescing transport"},
		{"plain", []string{"--transport", "plain"}, "central"},
		{"memory", []string{"--limiter", "memory"}, "local"},
	} {
		args := append([]string{"run", "hot-tenant", "--rate", "2000", "--duration", "1s", "-q", "--out", filepath.Join(dir, tc.name)}, tc.flags...)
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err != nil {
			t.Errorf("ratelab %v: %v\n%s", args, err, out)
			continue
		}
		sum, err := results.ReadSummary(filepath.Join(dir, tc.name, results.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Environment.Mode != tc.mode {
			t.Errorf("ratelab %v: mode %q, want %q", args, sum.Environment.Mode, tc.mode)
		}
	}
}
