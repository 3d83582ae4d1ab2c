package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// The sides' names: the directories of their runs in Out, and the words of the output.
const (
	SideBase = "base"
	SideHead = "head"
)

// binaries are the two sides' ratelab binaries; base is empty when comparing with a committed
// baseline.
type binaries struct{ base, head string }

// buildSides builds the head from the working tree and the base from its revision in a
// temporary worktree (removed before it returns), unless prebuilt, and describes both in res.
// Both builds use -trimpath, so the base's packages that did not change come from the build
// cache although its worktree is another directory.
func buildSides(ctx context.Context, o Options, tmp string, res *Result) (binaries, error) {
	bins := binaries{base: o.BaseBinary, head: o.HeadBinary}
	var err error
	if res.Head, err = describeHead(ctx, o); err != nil {
		return bins, err
	}
	if bins.head == "" {
		bins.head = filepath.Join(tmp, "ratelab-head")
		logf(o, "building the head (%s) -> %s", res.Head, bins.head)
		if err := goBuild(ctx, o, o.Repo, bins.head, "head"); err != nil {
			return bins, err
		}
	}
	if o.Against != "" {
		res.Base = "the committed baseline " + o.Against
		return bins, nil
	}
	sha, how, err := baseRevision(ctx, o)
	if err != nil {
		return bins, err
	}
	res.Base = sha[:12] + " (" + how + ")"
	if bins.base != "" {
		return bins, nil
	}
	bins.base = filepath.Join(tmp, "ratelab-base")
	src := filepath.Join(tmp, "base-src")
	logf(o, "building the base %s in a temporary worktree -> %s", res.Base, bins.base)
	if _, err := git(ctx, o.Repo, "worktree", "add", "--detach", "--quiet", src, sha); err != nil {
		return bins, err
	}
	berr := goBuild(ctx, o, src, bins.base, sha[:12])
	// The worktree goes whatever the build did; remove drops its administrative files too.
	if _, rerr := git(context.WithoutCancel(ctx), o.Repo, "worktree", "remove", "--force", src); rerr != nil && berr == nil {
		berr = rerr
	}
	return bins, berr
}

// baseRevision resolves Options.Base, or the merge base of HEAD with the main branch, to a
// commit, and says how it was chosen.
func baseRevision(ctx context.Context, o Options) (sha, how string, err error) {
	if o.Base != "" {
		sha, err = git(ctx, o.Repo, "rev-parse", "--verify", "--quiet", o.Base+"^{commit}")
		if err != nil {
			return "", "", fmt.Errorf("perf-check: base = %q is not a revision of %s: %w; give a branch, tag or commit (git rev-parse must know it)", o.Base, o.Repo, err)
		}
		return sha, "--base " + o.Base, nil
	}
	for _, main := range []string{DefaultMainBranch, "origin/" + DefaultMainBranch} {
		if _, err := git(ctx, o.Repo, "rev-parse", "--verify", "--quiet", main+"^{commit}"); err != nil {
			continue
		}
		sha, err = git(ctx, o.Repo, "merge-base", "HEAD", main)
		if err != nil {
			return "", "", fmt.Errorf("perf-check: the merge base of HEAD and %s: %w; give --base REF (a shallow clone needs fetch-depth: 0)", main, err)
		}
		return sha, "merge base of HEAD and " + main, nil
	}
	return "", "", fmt.Errorf("perf-check: base: neither %s nor origin/%s is a branch of %s; give --base REF, or fetch the main branch (git fetch origin %s)",
		DefaultMainBranch, DefaultMainBranch, o.Repo, DefaultMainBranch)
}

// describeHead names the head: HEAD's commit, and whether the working tree differs from it.
func describeHead(ctx context.Context, o Options) (string, error) {
	sha, err := git(ctx, o.Repo, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", fmt.Errorf("perf-check: repo = %s: %w; run it in a git checkout of ratelab", o.Repo, err)
	}
	desc := sha[:12]
	if st, err := git(ctx, o.Repo, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		desc += " with the working tree's changes"
	}
	return desc, nil
}

// goBuild builds ./cmd/ratelab of dir into bin, its version set to label.
func goBuild(ctx context.Context, o Options, dir, bin, label string) error {
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags", "-X main.version=perf-check-"+label, "-o", bin, "./cmd/ratelab")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("perf-check: building %s in %s: %w\n%s", label, dir, err, bytes.TrimSpace(out))
	}
	return nil
}

// git runs git in repo and returns its trimmed stdout; an error carries its stderr.
func git(ctx context.Context, repo string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New("git " + strings.Join(args, " ") + ": " + msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// logf writes a progress line through Options.Logf.
func logf(o Options, format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}
