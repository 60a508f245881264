package prd

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/ralph-harness/ralph/internal/durable"
	"github.com/ralph-harness/ralph/internal/flock"
	"github.com/ralph-harness/ralph/internal/readbuf"
)

// ErrUnchanged, returned by an Update function, ends the update without
// writing the file.
var ErrUnchanged = errors.New("unchanged")

// Update reads the file at path, lets fn change it, and saves it, holding an
// exclusive lock on the file's directory meanwhile, so that a running loop
// and a person's `ralph task` edit never lose each other's changes. The lock
// is on the directory because prd.json itself is replaced on every save. An
// error from fn (other than ErrUnchanged) leaves the file as it was.
//
// Messages name the file as name, as Read's do. A failure to lock or read
// the file is an *fs.PathError. When q is not nil, the last sync of the
// save, the one that makes the rename durable, is queued on it (see
// atomicfile.WriteQueued): the loop records a verdict and goes on while the
// disk catches up.
func Update(path, name string, q *durable.Queue, fn func(*File) error) error {
	unlock, err := lockDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer unlock()
	f, err := Read(path, name)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		if errors.Is(err, ErrUnchanged) {
			return nil
		}
		return err
	}
	return f.save(path, q)
}

// lockDir takes an exclusive lock on dir, waiting for it; the function it
// returns releases it.
func lockDir(dir string) (func(), error) {
	d, err := readbuf.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := flock.Lock(d, true); err != nil {
		d.Close()
		return nil, &fs.PathError{Op: "lock", Path: dir, Err: err}
	}
	return func() { d.Close() }, nil
}
