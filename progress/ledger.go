package progress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ralph-harness/ralph/internal/atomicfile"
	"github.com/ralph-harness/ralph/internal/durable"
	"github.com/ralph-harness/ralph/internal/flock"
	"github.com/ralph-harness/ralph/internal/readbuf"
)

// ErrLocked is returned (wrapped) by Open when another process holds the
// lock on the file's directory: another ralph is running in it.
var ErrLocked = errors.New("another ralph holds the lock")

// Ledger is progress.txt opened for appending by the one ralph that runs in a
// directory. It holds an exclusive lock on the directory until Close.
type Ledger struct {
	path  string
	dir   *os.File // the file's directory, locked
	brief *os.File // the file, locked by OpenBrief; nil for Open
	f     *os.File
	cov   *covered       // f's writes, and which of them are durable
	q     *durable.Queue // where the syncs go; nil: done at once
}

// covered counts ralph's writes to a file and those a sync has made
// durable. A sync covers every write made before it began, so the sync
// queued for a record has nothing left to do when another one began after
// that record was written: the sync of an iteration's entry, queued behind
// prd.json's, usually covers the next iteration's started marker too.
type covered struct {
	writes atomic.Int64
	synced atomic.Int64
}

// syncFile flushes a file to stable storage; a test counts the calls.
var syncFile = (*os.File).Sync

// sync makes the file's n-th write durable, with a sync of f unless one
// has already.
func (c *covered) sync(f *os.File, n int64) error {
	if c.synced.Load() >= n {
		return nil
	}
	upto := c.writes.Load()
	if err := syncFile(f); err != nil {
		return err
	}
	// The syncs of a file run one after another (see durable.Queue), so
	// upto only grows.
	c.synced.Store(upto)
	return nil
}

// Open opens the file at path for appending, creating it empty (mode 0644) if
// it is missing, after taking an exclusive, non-blocking lock on its
// directory. If another process holds the lock, Open returns an error
// wrapping ErrLocked.
//
// The lock is on the directory, not on progress.txt, because the file can
// be replaced under a running ralph (an editor that saves by renaming, a
// person who removes it; see Follow): a lock on the old file would leave the
// new one free for a second ralph, whose recovery would then kill the first
// one's agent. Nothing replaces the directory the ledger is in.
func Open(path string) (*Ledger, error) {
	return open(path, lockPatience)
}

// open is Open, trying again for patience while the lock is held.
func open(path string, patience time.Duration) (*Ledger, error) {
	dir, err := lockFile(filepath.Dir(path), patience)
	if err != nil {
		return nil, err
	}
	f, err := openAppend(path)
	if err != nil {
		dir.Close()
		return nil, err
	}
	return &Ledger{path: path, dir: dir, f: f, cov: new(covered)}, nil
}

// lockPatience is how long Open tries again for a lock that is held.
var lockPatience = 300 * time.Millisecond

// lockPatiently takes the lock on f, trying again for patience while it
// is held: a ralph killed a moment ago can hold it still, for as long as a
// child it was starting takes to exec or to die with it (the child has the
// locked directory open until then), and a ralph started at once after the
// kill, by a script, must not take it for another one running.
func lockPatiently(f *os.File, patience time.Duration) error {
	deadline := time.Now().Add(patience)
	for {
		err := flock.Lock(f, false)
		if !errors.Is(err, flock.ErrLocked) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// OpenBrief is Open for a holder that lets go of the lock soon (a `ralph
// task` edit that records an iteration a stopped ralph left open), and
// says so: once it holds the directory's lock, it takes a lock on the file
// itself, which a ralph loop that finds the directory locked looks at (see
// OpenWaiting). It returns an error wrapping ErrLocked when another holds
// either lock. The kernel releases both with the process, kill -9
// included: a holder that died holds nothing.
//
// The file's lock is taken after the directory's, and let go of before
// it (see Close), so that a holder of the file's lock holds the
// directory's: one that held the file while it tried for the directory,
// which a running loop held, was taken by a loop started then for the
// holder of the directory, and said it waited for a `ralph task` edit
// before it was refused as another loop.
func OpenBrief(path string) (*Ledger, error) {
	l, err := Open(path)
	if err != nil {
		return nil, err
	}
	brief, err := lockFile(path, lockPatience)
	if err != nil {
		l.Close()
		return nil, err
	}
	l.brief = brief
	return l, nil
}

// OpenWaiting is Open for a ralph loop, which holds the lock for its
// whole run. A lock held by another loop is refused as Open refuses it;
// one held by a brief holder (see OpenBrief) is waited for, up to
// longest, and waiting is called once as the wait begins. A wait that
// longest or ctx ends returns an error wrapping ErrBrief, or ctx's.
func OpenWaiting(ctx context.Context, path string, longest time.Duration, waiting func()) (*Ledger, error) {
	var deadline time.Time
	for {
		l, err := Open(path)
		if !errors.Is(err, ErrLocked) {
			return l, err
		}
		if !briefHeld(path) {
			// The directory is held, the file is not: by another
			// loop, or by a brief holder that has just taken the
			// directory's lock and not yet the file's, or has just
			// let go of the file's and not yet of the directory's.
			// Either takes a moment, which Open's patience outlasts.
			if l, again := open(path, lockPatience); again == nil {
				return l, nil
			}
			if !briefHeld(path) {
				return nil, err
			}
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(longest)
			if waiting != nil {
				waiting()
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s: %w for over %v", filepath.Dir(path), ErrBrief, longest)
		}
	}
}

// ErrBrief is returned (wrapped) by OpenWaiting when a brief holder (see
// OpenBrief) held the lock for longer than the wait.
var ErrBrief = errors.New("a `ralph task` edit has held the lock")

// briefHeld reports whether a brief holder (see OpenBrief) holds the lock
// on the ledger at path: it holds the file's lock only while it holds the
// directory's. It takes the file's lock for an instant to find out;
// OpenBrief, which tries again for a moment, is not kept out by it.
func briefHeld(path string) bool {
	held, _ := heldLock(path)
	return held
}

// Held reports whether a ralph holds the ledger at path open (see Open). It
// takes the lock for an instant to find out, so it is for a command that
// has reason to think a loop runs, not for polling.
func Held(path string) (bool, error) { return heldLock(filepath.Dir(path)) }

// Holder is who holds the lock on a ledger (see HeldBy).
type Holder int

const (
	// NoHolder: nobody holds it.
	NoHolder Holder = iota
	// LoopHolder: a ralph loop, which holds it for its whole run.
	LoopHolder
	// BriefHolder: a `ralph task` edit recording an iteration a stopped
	// ralph left open, which lets go of it soon (see OpenBrief).
	BriefHolder
)

// HeldBy says who holds the lock on the ledger at path, as Held finds
// out, for a command that waits for a lock the holder takes too.
func HeldBy(path string) (Holder, error) {
	switch held, err := Held(path); {
	case err != nil || !held:
		return NoHolder, err
	case briefHeld(path):
		return BriefHolder, nil
	}
	return LoopHolder, nil
}

// heldLock reports whether another holds the lock on the file (or
// directory) at path, taking it for an instant to find out.
func heldLock(path string) (bool, error) {
	f, err := readbuf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := flock.Lock(f, false); {
	case errors.Is(err, flock.ErrLocked):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, nil
}

// lockFile opens the file (or directory) at path and takes its lock,
// trying again for patience while another holds it (see lockPatiently),
// which is ErrLocked.
func lockFile(path string, patience time.Duration) (*os.File, error) {
	f, err := readbuf.Open(path)
	if err == nil {
		if err = lockPatiently(f, patience); err != nil {
			f.Close()
		}
	}
	if err != nil {
		if errors.Is(err, flock.ErrLocked) {
			err = ErrLocked
		}
		return nil, fmt.Errorf("lock %s: %w", path, bare(err))
	}
	return f, nil
}

// QueueSyncs makes the ledger queue the sync of each record on q (see
// package durable) instead of syncing before Begin or Append returns. The
// record is written, and survives ralph being killed, either way; it is on
// disk for a crash of the machine once q has run the sync.
func (l *Ledger) QueueSyncs(q *durable.Queue) { l.q = q }

func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, bare(err))
	}
	return f, nil
}

// Append writes e at the end of the file with a single write call, then
// syncs it to disk (or queues the sync, see QueueSyncs). If the file does
// not end in a newline (an earlier append was torn), a newline is written
// first, so the entry's start marker begins a line; a blank line separates
// the entry from what precedes it, unless that is the iteration's started
// marker (see Begin), which the entry follows directly.
func (l *Ledger) Append(e Entry) error {
	if err := l.write(func(last []byte, whole bool) []byte {
		var data []byte
		if len(last) > 0 && !endsWithMark(last, whole) {
			if last[len(last)-1] != '\n' {
				data = append(data, '\n')
			}
			data = append(data, '\n')
		}
		return append(data, Format(e)...)
	}); err != nil {
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	return nil
}

// lastWindow is how much of the end of the file write reads to decide how
// the next record is separated from what precedes it.
const lastWindow = 4 << 10

// write appends what build returns, given the last bytes of the file (whole:
// all of it), with a single write call, and syncs the file or queues its
// sync.
func (l *Ledger) write(build func(last []byte, whole bool) []byte) error {
	if _, err := l.Follow(); err != nil {
		return err
	}
	st, err := l.f.Stat()
	if err != nil {
		return err
	}
	last := make([]byte, min(st.Size(), lastWindow))
	if _, err := l.f.ReadAt(last, st.Size()-int64(len(last))); err != nil {
		return err
	}
	if _, err := l.f.Write(build(last, int64(len(last)) == st.Size())); err != nil {
		return bare(err)
	}
	f, cov := l.f, l.cov
	n := cov.writes.Add(1)
	return bare(l.q.Do(func() error { return cov.sync(f, n) }))
}

// bare drops the operation and path of a *fs.PathError: the callers' own
// messages name the file already.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Follow makes the ledger hold the file at its path again. When the file
// was replaced while open, as editors that save by renaming a new file over
// the old one do when a human edits the head, it opens the new one:
// appending to the old, unlinked file would lose every entry from then on.
// When the file was removed, it first puts back what the file it holds
// has, whole, so that no entry is lost: restored says so. Every append
// follows the path this way.
func (l *Ledger) Follow() (restored bool, err error) {
	held, err := l.f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(l.path)
	if err == nil && os.SameFile(held, now) {
		return false, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		if err := atomicfile.Copy(l.path, io.NewSectionReader(l.f, 0, held.Size()), held.Mode().Perm()); err != nil {
			return false, fmt.Errorf("restore removed file: %w", err)
		}
		restored = true
	}
	f, err := openAppend(l.path)
	if err != nil {
		return restored, fmt.Errorf("reopen replaced file: %w", err)
	}
	// The syncs queued for the old file must find it open; whether they
	// failed, the queue's next Wait says.
	l.q.Wait()
	l.f.Close()
	l.f, l.cov = f, new(covered)
	return restored, nil
}

// Close waits for the syncs queued for the file, closes it and releases the
// lock. A sync that failed is its error, as the queue reports it.
func (l *Ledger) Close() error {
	// The file is let go of before the directory (see OpenBrief).
	defer l.dir.Close()
	if l.brief != nil {
		defer l.brief.Close()
	}
	if err := l.q.Wait(); err != nil {
		l.f.Close()
		return err
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
