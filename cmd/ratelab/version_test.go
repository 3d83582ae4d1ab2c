package main

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, stamped string
		info          *debug.BuildInfo
		want          string
	}{
		{"the Makefile's stamp wins", "v1.2.0-3-gabc", vcs(rev, "false"), "v1.2.0-3-gabc"},
		{"go install module@version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0"},
		{"a build in a clean checkout", "dev", vcs(rev, "false"), "0123456789ab"},
		{"a build with changes", "dev", vcs(rev, "true"), "0123456789ab-dirty"},
		{"no commit recorded", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build info", "dev", nil, "dev"},
	} {
		if got := versionOf(tc.stamped, tc.info); got != tc.want {
			t.Errorf("%s: versionOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionCommand runs `ratelab version` on the binary built as `go build` builds it (no
// -ldflags): inside a git checkout it must name the checkout's commit, not "dev".
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	code, out, stderr := runBinary(t, t.TempDir(), "version")
	if code != 0 {
		t.Fatalf("ratelab version: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(out, runtime.Version()) || !strings.HasPrefix(out, "ratelab ") {
		t.Errorf("ratelab version printed %q: want the version first and the Go version %s", out, runtime.Version())
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Logf("not a git checkout (%v): the commit cannot be checked", err)
		return
	}
	commit := strings.TrimSpace(string(head))
	if !strings.Contains(out, "commit  "+commit) || strings.HasPrefix(out, "ratelab dev") {
		t.Errorf("ratelab version printed %q: want commit %s and a version from it", out, commit)
	}
}
