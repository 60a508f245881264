package loop

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
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
