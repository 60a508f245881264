package progress

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked is returned (wrapped) by Open when another process holds the
// lock on the file: another ralph is running in the same directory.
var ErrLocked = errors.New("another ralph holds the lock")

// Ledger is progress.txt opened for appending by the one ralph that runs in a
// directory. It holds an exclusive lock on the file until Close.
type Ledger struct {
	path string
	f    *os.File
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

func openLocked(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// Append writes e at the end of the file with a single write call, then
// syncs it to disk. If the file does not end in a newline (an earlier append
// was torn), a newline is written first, so the entry's start marker begins a
// line; a blank line separates the entry from what precedes it.
func (l *Ledger) Append(e Entry) error {
	if err := l.reopenIfReplaced(); err != nil {
		return err
	}
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	var data []byte
	if size := st.Size(); size > 0 {
		last := make([]byte, 1)
		if _, err := l.f.ReadAt(last, size-1); err != nil {
			return fmt.Errorf("append to %s: %w", l.path, err)
		}
		if last[0] != '\n' {
			data = append(data, '\n')
		}
		data = append(data, '\n')
	}
	data = append(data, Format(e)...)
	if _, err := l.f.Write(data); err != nil {
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	return nil
}

// reopenIfReplaced follows the path when progress.txt was replaced while
// open, as editors that save by renaming a new file over the old one do when
// a human edits the head. Appending to the old, unlinked file would lose
// every entry from then on.
func (l *Ledger) reopenIfReplaced() error {
	held, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	now, err := os.Stat(l.path)
	if err == nil && os.SameFile(held, now) {
		return nil
	}
	f, err := openLocked(l.path)
	if err != nil {
		return fmt.Errorf("reopen replaced file: %w", err)
	}
	l.f.Close()
	l.f = f
	return nil
}

// Close releases the lock and closes the file.
func (l *Ledger) Close() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
