//go:build unix

package readbuf

import (
	"errors"
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
