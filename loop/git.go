package loop

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// inWorkTree reports whether dir is inside a git work tree (and git is
// installed). Outside one the loop works the same, without commits.
func inWorkTree(ctx context.Context, dir string) bool {
	out, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree")
	return err == nil && strings.TrimSpace(out) == "true"
}

// gitTree is inWorkTree for the loop's directory, asked once per run: git
// is not started for nothing on every iteration outside a work tree.
func (o *Options) gitTree(ctx context.Context) bool {
	if o.inGit == nil {
		in := inWorkTree(ctx, o.Dir)
		o.inGit = &in
	}
	return *o.inGit
}

// gitCommit commits every change in the work tree and returns the short id
// of the new commit, or "" when there was nothing to commit.
func gitCommit(ctx context.Context, dir, subject, body string) (string, error) {
	// Only the work directory: in a larger repository, whatever else is
	// going on outside it is not ralph's to commit.
	if _, err := git(ctx, dir, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	if _, err := git(ctx, dir, "diff", "--cached", "--quiet", "--", "."); err == nil {
		return "", nil
	}
	msg := subject
	if body != "" {
		msg += "\n\n" + body
	}
	if _, err := git(ctx, dir, "commit", "--quiet", "-m", msg, "--", "."); err != nil {
		return "", err
	}
	out, err := git(ctx, dir, "rev-parse", "--short", "HEAD")
	return strings.TrimSpace(out), err
}

// gitCommitFile commits one file alone, leaving every other change as it is.
func gitCommitFile(ctx context.Context, dir, file, subject string) (string, error) {
	if _, err := git(ctx, dir, "add", "--", file); err != nil {
		return "", err
	}
	if _, err := git(ctx, dir, "diff", "--cached", "--quiet", "--", file); err == nil {
		return "", nil
	}
	if _, err := git(ctx, dir, "commit", "--quiet", "-m", subject, "--", file); err != nil {
		return "", err
	}
	out, err := git(ctx, dir, "rev-parse", "--short", "HEAD")
	return strings.TrimSpace(out), err
}

// gitDirty reports whether the work directory has uncommitted changes.
func gitDirty(ctx context.Context, dir string) bool {
	out, err := git(ctx, dir, "status", "--porcelain", "--", ".")
	return err == nil && strings.TrimSpace(out) != ""
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return "", fmt.Errorf("git %s: %w", args[0], err)
		}
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return stdout.String(), nil
}
