package loop

import (
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a git work tree at root with the files given, commits
// them, and returns the directory work, the loop's, in it: a loop may run
// in a subdirectory of a larger repository.
func gitRepo(t *testing.T, files map[string]string) (root, work string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	root = t.TempDir()
	work = filepath.Join(root, "work")
	for name, data := range files {
		path := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGit(t, root, "init", "-q")
	mustGit(t, root, "add", "-A")
	mustGit(t, root, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "initial")
	return root, work
}

// mustGit runs git in dir and returns its output, failing t if it fails.
func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// TestGitBlobs: git's copy of a file is the index's, else HEAD's; a file
// git does not have has none.
func TestGitBlobs(t *testing.T) {
	_, work := gitRepo(t, map[string]string{"a.txt": "a", "b/b.txt": "b", "d.txt": "d"})
	// b.txt is in HEAD only; d.txt staged as changed; c.txt untracked.
	mustGit(t, work, "rm", "-q", "--cached", "b/b.txt")
	if err := os.WriteFile(filepath.Join(work, "d.txt"), []byte("d2"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, work, "add", "d.txt")
	if err := os.WriteFile(filepath.Join(work, "c.txt"), []byte("c"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a.txt":   mustGit(t, work, "rev-parse", ":0:./a.txt"),
		"b/b.txt": mustGit(t, work, "rev-parse", "HEAD:./b/b.txt"),
		"d.txt":   mustGit(t, work, "rev-parse", ":0:./d.txt"),
	}
	got := gitBlobs(context.Background(), work, map[string]bool{"a.txt": true, "b/b.txt": true, "c.txt": true, "d.txt": true})
	if len(got) != len(want) {
		t.Errorf("gitBlobs = %q, want %q", got, want)
	}
	for name, id := range want {
		if got[name] != id {
			t.Errorf("blob of %s = %q, want %q", name, got[name], id)
		}
	}
}

// TestRestoreBlob: a file is put back from git's copy only when that copy
// is the file as it was: the same contents for a protected file, the same
// size for a test file. A copy that is not changes nothing, and leaves
// nothing behind.
func TestRestoreBlob(t *testing.T) {
	const was = "#!/bin/sh\ngrep -q ok feature.txt\n"
	_, work := gitRepo(t, map[string]string{"tests/test_x.sh": was})
	o := &Options{Dir: work}
	name := "tests/test_x.sh"
	path := filepath.Join(work, name)
	blob := mustGit(t, work, "rev-parse", ":0:./"+name)
	test := fileState{mode: 0o755, size: int64(len(was)), blob: blob}
	protected := test
	protected.sum, protected.summed = sha256.Sum256([]byte(was)), true
	other := protected
	other.sum = sha256.Sum256([]byte("what a person had since"))
	longer := test
	longer.size++
	gone := test
	gone.blob = strings.Repeat("0", len(blob))
	for _, c := range []struct {
		name string
		st   fileState
		now  string // the file as the agent left it; "" for deleted
		ok   bool
	}{
		{"deleted test file", test, "", true},
		{"changed protected file", protected, "exit 0\n", true},
		{"protected file changed since git's copy", other, "exit 0\n", false},
		{"test file of another size than git's copy", longer, "", false},
		{"no copy in git", fileState{mode: 0o644, size: 3}, "", false},
		{"git's copy gone", gone, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(path)
			if c.now != "" {
				if err := os.WriteFile(path, []byte(c.now), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ok, err := restoreBlob(context.Background(), o, name, c.st)
			if err != nil || ok != c.ok {
				t.Fatalf("restoreBlob = %t, %v; want %t, no error", ok, err, c.ok)
			}
			want, wantMode := c.now, os.FileMode(0o644)
			if c.ok {
				want, wantMode = was, c.st.mode
			}
			data, err := os.ReadFile(path)
			switch {
			case want == "" && !os.IsNotExist(err):
				t.Errorf("the file is there (%q, %v), want none", data, err)
			case want != "" && string(data) != want:
				t.Errorf("the file holds %q (%v), want %q", data, err, want)
			}
			if info, err := os.Stat(path); err == nil && info.Mode().Perm() != wantMode {
				t.Errorf("the file's mode is %v, want %v", info.Mode().Perm(), wantMode)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range entries {
				if e.Name() != "test_x.sh" {
					t.Errorf("%s left in the directory", e.Name())
				}
			}
		})
	}
}

// TestJudgeLost: a change ralph could not undo blocks the story, whatever
// else happened, with a question that names it and says what to do, the
// agent's own question kept.
func TestJudgeLost(t *testing.T) {
	lost := []string{"tests/t.sh: the agent deleted this test file; past the 32 MiB of guarded files ralph keeps, and not in git as it was: " + lostEnd}
	if !isLost(lost[0]) || isLost("tests/t.sh: the agent deleted this test file; ralph restored it") {
		t.Fatal("isLost tells the lines apart wrong")
	}
	for _, c := range []Claim{{Done: true}, {}, {Blocked: true, Question: "Which DB?"}} {
		v := Judge(Evidence{Claim: c, Tampered: true, Lost: lost, Attempt: 5, MaxAttempts: 5, Iteration: 7, StoryID: "US-001"})
		want := lostPrefix(7) + "tests/t.sh: the agent deleted this test file; past the 32 MiB of guarded files ralph keeps, and not in git as it was. Put it back as it was, then run: ralph task answer US-001 \"…\" (until then the story cannot pass)"
		if c.Blocked {
			want += ". The agent asked too: Which DB?"
		}
		if v.Outcome != Blocked || v.Question != want {
			t.Errorf("Judge with claim %+v = %s, %q; want blocked, %q", c, v.Outcome, v.Question, want)
		}
	}
}
