package progress

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/ralph-harness/ralph/internal/atomicfile"
	"github.com/ralph-harness/ralph/internal/durable"
	"github.com/ralph-harness/ralph/internal/flock"
)

// ErrLocked is returned (wrapped) by Open when another process holds the
// lock on the file: another ralph is running in the same directory.
var ErrLocked = errors.New("another ralph holds the lock")

// Ledger is progress.txt opened for appending by the one ralph that runs in a
// directory. It holds an exclusive lock on the file until Close.
type Ledger struct {
	path string
	f    *os.File
	q    *durable.Queue // where the syncs go; nil: done at once
}

// Open opens the file at path for appending, creating it empty (mode 0644) if
// it is missing, and takes an exclusive, non-blocking lock on it. The lock is
// held on progress.txt itself because ralph never renames it. If another
// process holds the lock, Open returns an error wrapping ErrLocked.
func Open(path string) (*Ledger, error) {
	f, err := openLocked(path)
	if err != nil {
		return nil, err
	}
	return &Ledger{path: path, f: f}, nil
}

// QueueSyncs makes the ledger queue the sync of each record on q (see
// package durable) instead of syncing before Begin or Append returns. The
// record is written, and survives ralph being killed, either way; it is on
// disk for a crash of the machine once q has run the sync.
func (l *Ledger) QueueSyncs(q *durable.Queue) { l.q = q }

func openLocked(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := flock.Lock(f, false); err != nil {
		f.Close()
		if errors.Is(err, flock.ErrLocked) {
			err = ErrLocked
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
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
	return bare(l.q.Do(l.f.Sync))
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
	f, err := openLocked(l.path)
	if err != nil {
		return restored, fmt.Errorf("reopen replaced file: %w", err)
	}
	// The syncs queued for the old file must find it open; whether they
	// failed, the queue's next Wait says.
	l.q.Wait()
	l.f.Close()
	l.f = f
	return restored, nil
}

// Close waits for the syncs queued for the file, releases the lock and
// closes the file. A sync that failed is its error, as the queue reports it.
func (l *Ledger) Close() error {
	if err := l.q.Wait(); err != nil {
		l.f.Close()
		return err
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
