package loop

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitMessageBounded: git's stderr is quoted on one line, cut to
// maxGitMessage, however much a program git ran (a filter) printed.
func TestGitMessageBounded(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	if _, err := git(context.Background(), dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{".gitattributes": "a.txt filter=loud\n", "a.txt": "a\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := git(context.Background(), dir, "-c", "filter.loud.clean=sh -c 'yes error line | head -5000 >&2; exit 1'",
		"-c", "filter.loud.required=true", "add", "a.txt")
	if err == nil {
		t.Fatal("git add with a failing required filter succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || len(msg) > maxGitMessage+100 || !strings.Contains(msg, "error line; error line") {
		t.Errorf("error of %d bytes (want at most about %d, one line, quoting git): %.200q", len(msg), maxGitMessage, msg)
	}
}

// TestConfigWarningsIgnoredDir: with git.commit on in a directory its work
// tree ignores, the warning says so, and git is asked once whether it
// ignores it, not again for the warning.
func TestConfigWarningsIgnoredDir(t *testing.T) {
	log := loggingGit(t)
	root := t.TempDir()
	dir := filepath.Join(root, "proj")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("proj/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := git(context.Background(), root, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	o := &Options{Dir: dir, Config: Config{Commit: true, CommitAsked: true}}
	ws := o.configWarnings(context.Background())
	if len(ws) != 1 || !strings.Contains(ws[0], "git ignores") {
		t.Errorf("configWarnings = %q, want the one that git ignores the directory", ws)
	}
	if n, ran := gitRuns(t, log, " check-ignore "); n != 1 {
		t.Errorf("git check-ignore ran %d times, want 1; git ran:\n%s", n, ran)
	}
}

// loggingGit puts first in $PATH, for the test, a git that notes its
// arguments, a line a run, in the file whose path it returns.
func loggingGit(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "git.log")
	script := "#!/bin/sh\necho \"$*\" >>'" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return log
}

// gitRuns counts the runs that loggingGit's log has with what in their
// arguments, and returns the log.
func gitRuns(t *testing.T, log, what string) (int, string) {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(data), what), string(data)
}

// TestDetachedReftable: in a repository whose refs git keeps in a reftable
// (git init --ref-format=reftable, git 2.45 and later), HEAD's file is a
// stub that names no branch of the repository's: detached asks git, and
// tells a branch checked out from a commit.
func TestDetachedReftable(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := git(ctx, dir, "init", "-q", "--ref-format=reftable"); err != nil {
		t.Skipf("this git keeps no refs in a reftable (git 2.45 and later do): %v", err)
	}
	if _, err := git(ctx, dir, "-c", "user.name=ralph", "-c", "user.email=ralph@example.com", "commit", "-q", "--allow-empty", "-m", "first"); err != nil {
		t.Fatal(err)
	}
	if head, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD")); err != nil || strings.TrimSpace(string(head)) != "ref: refs/heads/.invalid" {
		t.Errorf(".git/HEAD = %q (%v), want the reftable backend's stub: this test no longer tries its branch of detached", head, err)
	}
	o := &Options{Dir: dir}
	if o.detached(ctx) {
		t.Error("on a branch: detached = true, want false")
	}
	if _, err := git(ctx, dir, "checkout", "-q", "--detach"); err != nil {
		t.Fatal(err)
	}
	if !o.detached(ctx) {
		t.Error("on a commit, no branch: detached = false, want true")
	}
}

// TestDetachedAllocates: the file git keeps HEAD in is read after every
// commit, as a bare descriptor into a buffer (readbuf.ReadFile), not with
// os.ReadFile, whose *os.File and poller set-up cost five system calls
// more for a regular file and allocations of their own.
func TestDetachedAllocates(t *testing.T) {
	head := filepath.Join(t.TempDir(), "HEAD")
	if err := os.WriteFile(head, []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &Options{gitHead: head}
	ctx := context.Background()
	detached := true
	allocs := testing.AllocsPerRun(20, func() { detached = o.detached(ctx) })
	if detached {
		t.Fatal("HEAD on a branch read as detached")
	}
	if allocs > 2 {
		t.Errorf("detached: %v allocations a call, want at most 2", allocs)
	}
}
