package loop

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/progress"
)

func TestProtectedDirs(t *testing.T) {
	for _, tc := range []struct {
		files []string
		want  []string
	}{
		{nil, nil},
		{[]string{"check.sh"}, []string{"."}},
		{[]string{"a/b/c.sh", "a/b/d.sh", "a/e.sh", "f/g.sh"}, []string{".", "a", "a/b", "f"}},
	} {
		s := fileSnapshot{protected: map[string]fileState{}}
		for _, f := range tc.files {
			s.protected[f] = fileState{}
		}
		if got := s.protectedDirs(); !slices.Equal(got, tc.want) {
			t.Errorf("protectedDirs of %q: got %q, want %q", tc.files, got, tc.want)
		}
	}
}

// TestStampsMoved moves a protected file's directory away and back, which
// leaves the file's stamp as it was, and writes a file next to it, which
// moves nothing.
func TestStampsMoved(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no watch of directories here")
	}
	dir := t.TempDir()
	write := func(name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rename := func(from, to string) {
		t.Helper()
		if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}
	write("a/b/check.sh")
	write("a/other.sh")
	s := fileSnapshot{protected: map[string]fileState{"a/b/check.sh": {}}}

	st, err := s.stampProtected(dir)
	if err != nil {
		t.Fatal(err)
	}
	write("a/b/new.log")
	write("a/new.log")
	write("new.log")
	if lines, err := st.moved(dir); err != nil || len(lines) != 0 {
		t.Errorf("files written next to protected ones: got %q, %v, want no lines", lines, err)
	}
	rename("a/b", "a/b.real")
	write("a/b/check.sh")
	if err := os.RemoveAll(filepath.Join(dir, "a/b")); err != nil {
		t.Fatal(err)
	}
	rename("a/b.real", "a/b")
	if got := st.touched(dir); len(got) != 0 {
		t.Errorf("touched: got %q, want none (the file's own stamp is as it was)", got)
	}
	lines, err := st.moved(dir)
	if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "a/b/: the checks moved or replaced this directory") {
		t.Errorf("directory moved away and back: got %q, %v, want a line for a/b/", lines, err)
	}
	st.close()
}

// TestGuardChecksWatchFailsOnce: a watch of the directories of protected
// files that cannot be set up (inotify's limits reached, say) is warned of
// once per run, not at every checks run; another failure is said once too.
func TestGuardChecksWatchFailsOnce(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		HarnessFile:  "",
		PRDFile:      `{"userStories": [{"id": "US-001", "title": "a"}]}`,
		ProgressFile: "",
		"check.sh":   "exit 0\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var warnings []string
	inGit := false
	o := &Options{Dir: dir, inGit: &inGit, Out: io.Discard, Err: io.Discard, Config: Config{Guard: Guard{Protect: []string{"check.sh"}}},
		OnEvent: func(ev Event) {
			if ev.Event == EventWarning {
				warnings = append(warnings, ev.Message)
			}
		}}
	failure := errors.New("watch the directories of protected files: too many open files")
	defer func(was func([]string) (*moveWatch, error)) { watchDirs = was }(watchDirs)
	watchDirs = func([]string) (*moveWatch, error) { return nil, failure }
	it := &iteration{o: o, entry: progress.Entry{StoryID: "US-001"}}
	for i := range 4 {
		if i == 2 {
			failure = errors.New("watch .: no space left on device")
		}
		s, err := takeSnapshot(context.Background(), o, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := it.guardChecks(context.Background(), s, nil, func() bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"watch the directories of protected files: too many open files: a directory of protected files that the checks move away and put back goes unseen",
		"watch .: no space left on device: a directory of protected files that the checks move away and put back goes unseen",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings over four checks runs:\n%q\nwant\n%q", warnings, want)
	}
}
