package prd

import (
	"errors"
	"io/fs"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/ralph-harness/ralph/internal/atomicfile"
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
	_, err := update(path, name, q, nil, false, nil, fn)
	return err
}

// UpdateStories is Update for an edit that changes the stories' own
// members only: no story's id or dependsOn, nor which stories the file
// has, nor their order. In a brief command (see ReadOnce) with more than
// one CPU, a large file's dependencies are then checked while fn changes
// it and it is written (see updateApart). valid reports whether the file
// was locked, read and found valid: an error is then fn's or the save's.
func UpdateStories(path, name string, q *durable.Queue, fn func(*File) error) (valid bool, err error) {
	return update(path, name, q, nil, true, nil, fn)
}

// Edit is UpdateStories when members is set, Update otherwise, for a
// command that a person or a script waits on (`ralph task`): when another
// holds the file's lock for longer than a moment (lockNotice), waiting is
// called once, as the wait goes on, so that the command says what it
// waits for rather than seem to hang. The save's syncs are waited for;
// valid is UpdateStories'.
func Edit(path, name string, members bool, waiting func(), fn func(*File) error) (valid bool, err error) {
	return update(path, name, nil, nil, members, waiting, fn)
}

// lockNotice is how long Edit waits for the file's lock before it says so.
var lockNotice = time.Second

// update is Update, where ahead, when not nil, is a save written ahead
// that takes the file's place if it still fits the text the file holds
// (see SetStatus); fn is called when it does not. members says that fn
// changes the stories' own members only (see UpdateStories); valid is
// UpdateStories'; waiting is Edit's.
func update(path, name string, q *durable.Queue, ahead *Ahead, members bool, waiting func(), fn func(*File) error) (valid bool, err error) {
	// From here on, path is the file locked: a link at path that is
	// changed meanwhile leaves the edit on the file it read.
	unlock, path, err := lock(path, waiting)
	if err != nil {
		return false, err
	}
	defer unlock()
	if q == nil {
		// The save's syncs are waited for before update returns, but run
		// on a queue of its own, so that the lock is let go of as soon
		// as the file is replaced: its descriptor may be the last hold
		// on the file replaced, and letting go of that frees the file's
		// pages and blocks, which for a large file takes as long as the
		// syncs: it runs while they do.
		own := new(durable.Queue)
		defer func() {
			unlock()
			if werr := own.Wait(); err == nil {
				err = werr
			}
		}()
		q = own
	}
	data, err := readText(path)
	if err != nil {
		return false, err
	}
	if ahead.commit(data, q) {
		putSpare(data)
		return true, nil
	}
	if members && apart(data) {
		return updateApart(path, name, q, data, fn)
	}
	f, err := parseRead(data, name)
	if err != nil {
		return false, err
	}
	if err := fn(f); err != nil {
		if errors.Is(err, ErrUnchanged) {
			return true, nil
		}
		return true, err
	}
	return true, f.save(path, q)
}

// apart reports whether updateApart may edit the text data of the file:
// a large one, read once by a process with more than one CPU. The loop's
// files are read again and remembered (see Parse), and it runs on one.
func apart(data []byte) bool {
	return len(data) >= splitMin && readOnce.Load() && runtime.GOMAXPROCS(0) > 1
}

// updateApart is update for an edit of the stories' own members, of the
// text data. The stories' dependencies are checked on one CPU (see
// checkDeps, which reads nothing else of them), while on another fn
// changes the file and it is written to a temp file (see atomicfile.Stage),
// which takes the file's place only once they are found sound. Problems
// of the file are told as parse tells them, and fn's errors, or the
// save's, only when it has none.
func updateApart(path, name string, q *durable.Queue, data []byte, fn func(*File) error) (valid bool, err error) {
	f, d, err := decodeText(data, name, true)
	if err != nil {
		return false, err
	}
	c, errs := f.checkIDs(name, d.hasStories, nil, d.problems, &d.hashes)
	if len(errs) > 0 {
		return false, errors.Join(append(errs, c.checkDeps()...)...)
	}
	checked := make(chan []error, 1)
	go func() { checked <- c.checkDeps() }()
	// fn looks stories up through the index checkIDs built, which
	// checkDeps only reads.
	f.ids = c.first
	edited := fn(f)
	var p *atomicfile.Pending
	var perr error
	if edited == nil {
		text, _ := f.marshal()
		p, perr = atomicfile.Stage(path, 0o644, text...)
		// Unless committed, the temp file is removed: when the
		// dependencies are not sound, or the commit finds the file's
		// link pointed elsewhere.
		defer p.Close()
	}
	if errs := <-checked; len(errs) > 0 {
		return false, errors.Join(errs...)
	}
	switch {
	case errors.Is(edited, ErrUnchanged):
		return true, nil
	case edited != nil:
		return true, edited
	case perr != nil:
		return true, perr
	}
	return true, p.Commit(q)
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
	unlock, _, err := lock(path, nil)
	return unlock, err
}

// lock is Lock, calling waiting, when not nil, once the lock has been
// held by another for lockNotice (see Edit), and returning once waiting
// has. It returns the file it locked too: path, or the file a link at path
// led to when it was locked, which Update reads and saves, the link
// resolved once. Resolved at the save instead, a link changed meanwhile
// had the edit of the file locked and read saved over a file neither
// locked nor read.
func lock(path string, waiting func()) (unlock func(), locked string, err error) {
	for {
		fd, err := readbuf.Descriptor(path)
		if err != nil {
			return nil, "", err
		}
		err = flock.LockDescriptor(fd, waiting == nil)
		if errors.Is(err, flock.ErrLocked) {
			stop := after(lockNotice, waiting)
			err = flock.LockDescriptor(fd, true)
			if stop() {
				waiting = nil // once
			}
		}
		if err != nil {
			syscall.Close(fd)
			return nil, "", &fs.PathError{Op: "lock", Path: path, Err: err}
		}
		locked, err := readbuf.Resolve(fd, path)
		if locked != "" {
			// Once: a second close could close a descriptor that
			// took its number since.
			return sync.OnceFunc(func() { syscall.Close(fd) }), locked, nil
		}
		syscall.Close(fd)
		if err != nil {
			return nil, "", err
		}
	}
}

// after calls fn once d has passed, unless the function it returns is
// called first; that function returns once fn, if it began, has, and
// reports whether it did.
func after(d time.Duration, fn func()) (stop func() (called bool)) {
	done := make(chan struct{})
	t := time.AfterFunc(d, func() {
		defer close(done)
		fn()
	})
	return func() bool {
		if t.Stop() {
			return false
		}
		<-done
		return true
	}
}
