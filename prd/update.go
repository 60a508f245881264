package prd

import (
	"errors"
	"io/fs"
	"sync"
	"syscall"

	"github.com/ralph-harness/ralph/internal/durable"
	"github.com/ralph-harness/ralph/internal/flock"
	"github.com/ralph-harness/ralph/internal/readbuf"
)

// ErrUnchanged, returned by an Update function, ends the update without
// writing the file.
var ErrUnchanged = errors.New("unchanged")

// Update reads the file at path, lets fn change it, and saves it, holding an
// exclusive lock on the file meanwhile (see Lock), so that a running
// loop and a person's `ralph task` edit never lose each other's changes. An
// error from fn (other than ErrUnchanged) leaves the file as it was.
//
// Messages name the file as name, as Read's do. A failure to lock or read
// the file is an *fs.PathError. When q is not nil, the last sync of the
// save, the one that makes the rename durable, is queued on it (see
// atomicfile.WriteQueued): the loop records a verdict and goes on while the
// disk catches up.
func Update(path, name string, q *durable.Queue, fn func(*File) error) error {
	return update(path, name, q, nil, fn)
}

// update is Update, where ahead, when not nil, is a save written ahead
// that takes the file's place if it still fits the text the file holds
// (see SetStatus); fn is called when it does not.
func update(path, name string, q *durable.Queue, ahead *Ahead, fn func(*File) error) error {
	unlock, err := Lock(path)
	if err != nil {
		return err
	}
	defer unlock()
	data, err := readText(path)
	if err != nil {
		return err
	}
	if ahead.commit(data, q) {
		putSpare(data)
		return nil
	}
	f, err := parseRead(data, name)
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

// Lock takes the exclusive lock Update holds on the file at path, waiting
// for it; the function it returns releases it. Every save replaces the file, so the
// lock may be won on a file that a save holding it has just replaced:
// Lock then locks the new one. (The directory is not locked: the loop
// holds that lock for its whole run, see progress.Open.)
//
// The lock is held on a bare descriptor: the loop takes it twice an
// iteration, and an *os.File would cost system calls for nothing (see
// readbuf.Descriptor).
func Lock(path string) (func(), error) {
	for {
		fd, err := readbuf.Descriptor(path)
		if err != nil {
			return nil, err
		}
		if err := flock.LockDescriptor(fd, true); err != nil {
			syscall.Close(fd)
			return nil, &fs.PathError{Op: "lock", Path: path, Err: err}
		}
		same, err := readbuf.IsFile(fd, path)
		if same {
			// Once: a second close could close a descriptor that
			// took its number since.
			return sync.OnceFunc(func() { syscall.Close(fd) }), nil
		}
		syscall.Close(fd)
		if err != nil {
			return nil, err
		}
	}
}
