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
}

// TestIsFile: a descriptor is the file at its path until a rename replaces
// that file; a path that is gone is an error that names it.
func TestIsFile(t *testing.T) {
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
	if same, err := IsFile(fd, path); !same || err != nil {
		t.Errorf("IsFile of the file just opened: %v, %v; want true", same, err)
	}
	other := filepath.Join(dir, "g")
	if err := os.WriteFile(other, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if same, err := IsFile(fd, path); same || err != nil {
		t.Errorf("IsFile after a rename over the path: %v, %v; want false", same, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	var pe *fs.PathError
	if same, err := IsFile(fd, path); same || !errors.As(err, &pe) || pe.Path != path {
		t.Errorf("IsFile of a removed path: %v, %v; want an error naming %s", same, err, path)
	}
}
