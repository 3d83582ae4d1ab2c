package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is ratelab's version as the summaries and `ratelab version` report it: what the
// Makefile stamps with -ldflags "-X main.version=$(git describe)", else what the Go toolchain
// recorded in the binary (see versionOf), else "dev".
var version = "dev"

func init() {
	info, _ := debug.ReadBuildInfo()
	version = versionOf(version, info)
}

// versionOf is stamped when the build stamped one; else the module's version for a `go install
// module@version` build; else the commit the binary was built from (12 hex digits, "-dirty" when
// the tree had changes), which `go build` and `go install` record inside a git checkout.
func versionOf(stamped string, info *debug.BuildInfo) string {
	if stamped != "" && stamped != "dev" {
		return stamped
	}
	if info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, modified, _ := vcsOf(info)
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "-dirty"
	}
	return rev
}

// vcsOf reads the commit, whether the tree was modified, and the commit's time from info.
func vcsOf(info *debug.BuildInfo) (rev string, modified bool, at string) {
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		case "vcs.time":
			at = s.Value
		}
	}
	return rev, modified, at
}

// versionInfo is what `ratelab version` prints; -o json prints it as is.
type versionInfo struct {
	Version string `json:"version"`
	// Commit is the git commit the binary was built from, "" when the build did not record one
	// (outside a git checkout, or with -buildvcs=false).
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"`
	// Date is the commit's time (RFC 3339), "" when unknown.
	Date string `json:"date,omitempty"`
	Go   string `json:"go"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		v.Commit, v.Modified, v.Date = vcsOf(info)
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var output *outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print ratelab's version, the commit it was built from and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, v := cmd.OutOrStdout(), currentVersion()
			if output.value == outputJSON {
				return printJSON(w, v)
			}
			fmt.Fprintf(w, "ratelab %s\n", v.Version)
			commit := "unknown: not recorded (built outside a git checkout, or with -buildvcs=false; go install -buildvcs=auto ./cmd/ratelab records it)"
			if v.Commit != "" {
				commit = v.Commit
				if v.Modified {
					commit += " (with uncommitted changes)"
				}
			}
			fmt.Fprintf(w, "  commit  %s\n", commit)
			if v.Date != "" {
				fmt.Fprintf(w, "  date    %s\n", v.Date)
			}
			fmt.Fprintf(w, "  go      %s %s/%s\n", v.Go, v.OS, v.Arch)
			return nil
		},
	}
	output = addOutputFlag(cmd, "json is the version, commit, date, Go version, OS and architecture", outputJSON)
	return cmd
}
