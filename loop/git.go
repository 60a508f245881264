package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ralph-harness/ralph/checks"
	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/internal/textcut"
)

// inWorkTree reports whether dir is inside a git work tree (and git is
// installed), and not a directory that work tree ignores. Outside one the
// loop works the same, without commits. An ignored directory is outside:
// git lists none of its files (the guard would see none) and adds none
// (every commit would fail).
func inWorkTree(ctx context.Context, dir string) bool {
	in, _, _ := workTree(ctx, dir)
	return in
}

// workTree is inWorkTree, whether dir is out of its work tree as one that
// the work tree ignores, and the path of git's index there, asked in the
// same run.
func workTree(ctx context.Context, dir string) (in, ignored bool, index string) {
	out, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree", "--git-path", "index")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || lines[0] != "true" {
		return false, false, ""
	}
	if gitIgnored(ctx, dir) {
		return false, true, ""
	}
	if len(lines) > 1 {
		index = gitPath(dir, lines[1])
	}
	return true, false, index
}

// gitIgnored reports whether the work tree that dir is in ignores dir (a
// .gitignore's "proj/"); false when git cannot tell. Files of it that git
// tracks all the same (added with -f) do not make it less ignored: git
// adds no new one there.
func gitIgnored(ctx context.Context, dir string) bool {
	_, err := git(ctx, dir, "check-ignore", "-q", "--no-index", ".")
	return err == nil // exit 1: not ignored
}

// gitIdentity reports whether git knows the author and the committer of a
// commit in dir: a name and an email, from its configuration or the
// environment.
func gitIdentity(ctx context.Context, dir string) bool {
	for _, who := range []string{"GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"} {
		if _, err := git(ctx, dir, "var", who); err != nil {
			return false
		}
	}
	return true
}

// committer refuses a run that is to commit when git does not know who
// commits, or when a merge (a cherry-pick, a revert, a rebase) is under
// way: every commit of it would fail, and leave no checkpoint; and the
// commit's `git add` would take conflicted files, markers and all, for
// resolved.
func (o *Options) committer(ctx context.Context) error {
	if !o.Config.Commit || !o.gitTree(ctx) {
		return nil
	}
	if !gitIdentity(ctx, o.Dir) {
		return &InputError{Err: fmt.Errorf("git.commit is on, but git does not know who commits: set user.name and user.email (git config user.email you@example.com), or set git.commit = false in %s", HarnessFile)}
	}
	if op := gitUnderway(ctx, o.Dir); op != "" {
		return &InputError{Err: fmt.Errorf("git.commit is on, but a %s is under way in the work tree: finish it or abort it (git %s --continue, or --abort), or set git.commit = false in %s", op, op, HarnessFile)}
	}
	return nil
}

// gitUnderway names the operation git has under way in the work tree at
// dir and waits for a person to end ("merge", "cherry-pick", "revert",
// "rebase"), by the files git keeps while it does; "" when there is none.
func gitUnderway(ctx context.Context, dir string) string {
	ops := []struct{ op, file string }{
		{"merge", "MERGE_HEAD"}, {"cherry-pick", "CHERRY_PICK_HEAD"}, {"revert", "REVERT_HEAD"},
		{"rebase", "rebase-merge"}, {"rebase", "rebase-apply"},
	}
	args := []string{"rev-parse"}
	for _, o := range ops {
		args = append(args, "--git-path", o.file)
	}
	out, err := git(ctx, dir, args...)
	if err != nil {
		return ""
	}
	for i, path := range strings.Split(strings.TrimSpace(out), "\n") {
		if i < len(ops) && exists(gitPath(dir, path)) {
			return ops[i].op
		}
	}
	return ""
}

// gitPath is a path git printed for dir (rev-parse --git-path), relative
// to dir or absolute.
func gitPath(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// exists reports whether there is a file or a directory at path.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// gitTree is inWorkTree for the loop's directory, asked once per run: git
// is not started for nothing on every iteration outside a work tree. It
// keeps whether the work tree ignores the directory (o.ignoredByGit) too.
func (o *Options) gitTree(ctx context.Context) bool {
	if o.inGit == nil {
		in, ignored, index := workTree(ctx, o.Dir)
		o.inGit, o.ignoredByGit, o.gitIndex = &in, ignored, index
	}
	return *o.inGit
}

// gitCommit commits what pathspec names (the work directory, ".", or one
// file) and nothing else: in a larger repository, whatever else is going on
// is not ralph's to commit. It returns the short id of the commit, or ""
// when there was nothing to commit.
//
// git adds and commits by paths refuse a repository in the work directory
// that has no commit checked out: a submodule not checked out (an empty
// directory), a repository the agent created and committed nothing to.
// Neither would change in the commit. When the commit fails, such
// repositories are looked for and left out, and the commit is tried
// again; exclude keeps them for the run's next commits, which then fail
// no more.
func gitCommit(ctx context.Context, dir, pathspec, msg string, exclude *[]string) (string, error) {
	// A commit runs programs the repository names (a filter, a signer)
	// that may hang: a second signal stops it, as it stops every child.
	// The guard's listings run none and are not cut short.
	ctx, cancel := proc.UntilKilled(ctx)
	defer cancel()
	id, err := commitPaths(ctx, dir, msg, append([]string{"--", pathspec}, *exclude...))
	if err == nil || ctx.Err() != nil {
		return id, err
	}
	more := unborn(ctx, dir)
	if len(more) == 0 || slices.Equal(more, *exclude) {
		return id, err
	}
	*exclude = more
	return commitPaths(ctx, dir, msg, append([]string{"--", pathspec}, more...))
}

// commitPaths is gitCommit's add and commit of what spec (pathspecs after
// "--") names.
func commitPaths(ctx context.Context, dir, msg string, spec []string) (string, error) {
	if _, err := git(ctx, dir, append([]string{"add", "--all"}, spec...)...); err != nil {
		return "", err
	}
	if _, err := git(ctx, dir, append([]string{"diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv"}, spec...)...); err == nil {
		return "", nil
	}
	if _, err := git(ctx, dir, append([]string{"commit", "--quiet", "-m", msg}, spec...)...); err != nil {
		return "", err
	}
	out, err := git(ctx, dir, "rev-parse", "--short", "HEAD")
	return strings.TrimSpace(out), err
}

// unborn are pathspecs that leave out the repositories in the work
// directory dir with no commit checked out (see gitCommit), sorted.
func unborn(ctx context.Context, dir string) []string {
	out, err := gitListing(ctx, dir)
	if err != nil {
		return nil
	}
	var found []string
	for name, e := range listing(out) {
		if e.kind == plainFile {
			continue
		}
		// Without .git of its own, git would answer for the repository
		// around it.
		repo := filepath.Join(dir, name)
		if !exists(filepath.Join(repo, ".git")) || !hasCommit(ctx, repo) {
			found = append(found, ":(exclude,literal)"+name)
		}
	}
	slices.Sort(found)
	return found
}

// hasCommit reports whether the repository at dir has a commit checked out.
func hasCommit(ctx context.Context, dir string) bool {
	_, err := git(ctx, dir, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	return err == nil
}

// hungUp reports whether a git command ended because a terminal's Ctrl-C,
// Ctrl-\ or hangup reached it (SIGINT, SIGQUIT or SIGHUP: ralph stops git
// with SIGKILL).
func hungUp(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return false
	}
	switch ws.Signal() {
	case syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP:
		return true
	}
	return false
}

// detached reports whether the work tree has no branch checked out: its
// commits belong to no branch, and a checkout leaves them behind. It reads
// the file git keeps HEAD in ("ref: refs/heads/main", or a commit's id when
// detached), found once per run: asked after every commit (an agent may
// check out a commit), it starts no git.
func (o *Options) detached(ctx context.Context) bool {
	if o.gitHead == "" {
		out, err := git(ctx, o.Dir, "rev-parse", "--git-path", "HEAD")
		if err != nil {
			return false
		}
		o.gitHead = gitPath(o.Dir, strings.TrimSpace(out))
	}
	head, err := readbuf.ReadFile(nil, o.gitHead)
	if bytes.Equal(bytes.TrimSpace(head), []byte("ref: refs/heads/.invalid")) {
		// The reftable backend's stub: HEAD is kept elsewhere, and only
		// git can say.
		_, err := git(ctx, o.Dir, "symbolic-ref", "-q", "HEAD")
		var exit *exec.ExitError
		return errors.As(err, &exit) && exit.ExitCode() == 1
	}
	return err == nil && !bytes.HasPrefix(head, []byte("ref: "))
}

// gitDirty reports whether the work directory has uncommitted changes
// besides the ledger's, which ralph commits anyway (a note added to its
// head, the marker of a ralph killed mid-iteration).
func gitDirty(ctx context.Context, dir string) bool {
	ctx, cancel := proc.UntilKilled(ctx) // status runs filters too
	defer cancel()
	out, err := git(ctx, dir, "status", "--porcelain", "--", ".", ":(exclude)"+ProgressFile)
	return err == nil && strings.TrimSpace(out) != ""
}

// gitSafe are the options of every git command ralph runs: no hooks and no
// file system monitor, programs that the repository's configuration names
// and that the agent can write. A post-commit hook the agent left would
// otherwise run after the verdict, in ralph's commit, and could mark its
// story passing. Housekeeping (gc --auto, maintenance) runs within the
// command: detached, it would outlive it, and be killed with what else git
// left running (see killOrphans).
var gitSafe = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
	"-c", "gc.autoDetach=false", "-c", "maintenance.autoDetach=false"}

// maxGitMessage bounds what an error quotes of git's stderr, in bytes.
const maxGitMessage = 1000

func git(ctx context.Context, dir string, args ...string) (string, error) {
	var stdout bytes.Buffer
	if err := gitTo(ctx, dir, &stdout, args...); err != nil {
		return "", err
	}
	return stdout.String(), nil
}

// gitTo is git with its output streamed to stdout, for an output too large
// to hold in memory (a file's contents).
func gitTo(ctx context.Context, dir string, stdout io.Writer, args ...string) error {
	prog, env, err := gitProgram(dir)
	if err != nil {
		return fmt.Errorf("git %s: %w", args[0], err)
	}
	cmd := exec.CommandContext(ctx, prog, append(slices.Clip(gitSafe), args...)...)
	cmd.Dir = dir
	cmd.Env = env
	// A program git started (a signer, a filter) may hold its output open
	// after git is killed: it is left to killOrphans.
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // git itself succeeded; what holds its output is killOrphans' business
	}
	if err != nil {
		// git's message on one line, so that a warning quoting it stays
		// one, and of a bounded length: a program that git ran (a filter)
		// may have printed any amount.
		msg := textcut.OneLine(strings.ReplaceAll(strings.TrimSpace(stderr.String()), "\n", "; "), maxGitMessage)
		if msg == "" {
			return fmt.Errorf("git %s: %w", args[0], err)
		}
		return fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return nil
}

// gitFound is where gitProgram found git, and git's environment.
type gitFound struct {
	prog string
	env  []string
}

// gitPrograms holds gitProgram's findings, by work directory and $PATH.
var gitPrograms sync.Map // [2]string{dir made absolute, PATH} → gitFound

// gitProgram returns the git that ralph runs in the work directory dir,
// found only in the directories of ralph's $PATH that the agent cannot
// write (see checks.LookPath), and the environment to run it in, without
// them: nor do the programs git runs (a signer, a credential helper) come
// from where the agent writes. It is found once for each dir and $PATH: it
// resolves every directory of $PATH, which costs more than a few of git's
// runs an iteration should.
func gitProgram(dir string) (string, []string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	key := [2]string{abs, os.Getenv("PATH")}
	if f, ok := gitPrograms.Load(key); ok {
		return f.(gitFound).prog, f.(gitFound).env, nil
	}
	prog, err := checks.LookPath("git", dir)
	if err != nil {
		return "", nil, err // not kept: git may yet be installed
	}
	f := gitFound{prog, checks.OutsidePath(nil, dir)}
	gitPrograms.Store(key, f)
	return f.prog, f.env, nil
}
