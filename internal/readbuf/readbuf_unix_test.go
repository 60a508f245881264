//go:build unix

package readbuf

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadFileRefusesPipe: a named pipe with no writer is refused at once,
// where reading it would wait for one.
func TestReadFileRefusesPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := ReadFile(nil, path); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile of a named pipe: %v, want %v", err, ErrNotRegular)
	}
	if f, _, err := OpenFile(path); !errors.Is(err, ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenFile of a named pipe: %v, want %v", err, ErrNotRegular)
	}
	// A directory opens (Open locks directories), and is refused by
	// OpenFile as a read of it would be: callers take EISDIR for bad input.
	dir := filepath.Dir(path)
	if f, err := Open(dir); err != nil {
		t.Errorf("Open of a directory: %v", err)
	} else {
		f.Close()
	}
	if _, err := ReadFile(nil, dir); !errors.Is(err, syscall.EISDIR) || errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile of a directory: %v, want %v", err, syscall.EISDIR)
	}
	if f, _, err := OpenFile(dir); !errors.Is(err, syscall.EISDIR) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenFile of a directory: %v, want %v", err, syscall.EISDIR)
	}
	if _, err := ReadEach(path, func([]byte) {}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadEach of a named pipe: %v, want %v", err, ErrNotRegular)
	}
	if _, err := ReadEach(dir, func([]byte) {}); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("ReadEach of a directory: %v, want %v", err, syscall.EISDIR)
	}
}

// TestResolveRenamed: a descriptor is the file at its path until a rename
// replaces that file; a path that is gone is an error that names it.
func TestResolveRenamed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := Descriptor(path)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if got, err := Resolve(fd, path); got != path || err != nil {
		t.Errorf("Resolve of the file just opened: %q, %v; want %q", got, err, path)
	}
	other := filepath.Join(dir, "g")
	if err := os.WriteFile(other, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve(fd, path); got != "" || err != nil {
		t.Errorf("Resolve after a rename over the path: %q, %v; want \"\"", got, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	var pe *fs.PathError
	if got, err := Resolve(fd, path); got != "" || !errors.As(err, &pe) || pe.Path != path {
		t.Errorf("Resolve of a removed path: %q, %v; want an error naming %s", got, err, path)
	}
}

// TestResolve: a descriptor opened through a link is the file the link
// leads to, by that file's path, until the link is changed; one opened by
// the file's own path is the file at that path.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	a, b, link := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "link")
	if err := errors.Join(os.WriteFile(a, nil, 0o644), os.WriteFile(b, nil, 0o644), os.Symlink("a", link)); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(a)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := Descriptor(link)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if got, err := Resolve(fd, link); got != real || err != nil {
		t.Errorf("Resolve through the link: %q, %v; want %q", got, err, real)
	}
	if got, err := Resolve(fd, a); got != a || err != nil {
		t.Errorf("Resolve by the file's path: %q, %v; want %q", got, err, a)
	}
	if err := errors.Join(os.Remove(link), os.Symlink("b", link)); err != nil {
		t.Fatal(err)
	}
	if got, err := Resolve(fd, link); got != "" || err != nil {
		t.Errorf("Resolve through the link changed: %q, %v; want \"\"", got, err)
	}
}
