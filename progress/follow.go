package progress

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ralph-harness/ralph/internal/readbuf"
)

// followWindow is how far before the end of the file a Follower starts
// reading: far enough back to hold an entry that is being appended as it
// starts.
const followWindow = 256 << 10

// Follower reads the entries appended to a ledger as they are completed,
// for `ralph log -f`. Each Poll reads only what was appended since the last
// one, and passes on each complete entry once: a last entry without its end
// marker (torn, or still being written) is passed on when its end arrives,
// or never.
//
// Entries are told apart by their iteration numbers, which only grow: a
// Follower passes on only entries numbered above the last it passed on.
// When the file is replaced or truncated (an editor saving the head), it
// reads it again from the start, skipping what it passed on already; if
// the entries it passed on last are gone or not as they were (an agent
// appended entries of its own, which ralph's guard then took out), it
// carries on after the newest of them the file still holds as it was:
// ralph's own entry, numbered as the agent's was, is passed on then. When
// none is left, the ledger was started over, and it carries on after the
// newest entry the file holds. A rewrite that leaves the file no shorter
// is told by the bytes before where the last read ended.
type Follower struct {
	path   string
	last   int         // the number of the last entry passed on
	passed []passedOn  // the last entries passed on, oldest first
	seen   []byte      // the last bytes before off, as read
	off    int64       // where the next read starts
	skip   bool        // off may be inside a line: skip to the next
	file   fs.FileInfo // the file read last, to notice it being replaced
}

// passedOn is an entry a Follower passed on: its number, and its text as
// Format writes it.
type passedOn struct {
	n    int
	text string
}

// followKept is how many of the entries it passed on a Follower keeps, and
// followSeen how many bytes before where it read last.
const (
	followKept = 16
	followSeen = 64
)

// NewFollower returns a Follower of the ledger at path that passes on the
// entries numbered above after. A missing file is waited for.
func NewFollower(path string, after int) (*Follower, error) {
	fl := &Follower{path: path, last: after}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fl, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, bare(err))
	}
	fl.file = st
	if st.Size() > followWindow {
		fl.off, fl.skip = st.Size()-followWindow, true
	}
	return fl, nil
}

// Poll reads what was appended to the file since the last call and calls
// fn for each entry completed meanwhile, oldest first, stopping at fn's
// first error.
func (fl *Follower) Poll(fn func(Entry) error) error {
	f, st, err := readbuf.OpenFile(fl.path)
	if errors.Is(err, fs.ErrNotExist) {
		fl.off, fl.skip, fl.file = 0, false, nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", fl.path, bare(err))
	}
	defer f.Close()
	reread := (fl.file != nil && !os.SameFile(fl.file, st)) || st.Size() < fl.off || fl.rewritten(f)
	if reread {
		fl.off, fl.skip, fl.seen = 0, false, nil
	}
	fl.file = st
	if st.Size() == fl.off {
		return nil
	}
	start := fl.off
	if fl.skip {
		start-- // to see whether off starts a line
	}
	buf := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return fmt.Errorf("read %s: %w", fl.path, bare(err))
	}
	skipped := 0
	if fl.skip {
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 {
			fl.off = st.Size()
			return nil
		}
		skipped = nl + 1
		fl.skip = false
	}
	entries, used := scanEntries(buf[skipped:])
	fl.off = start + int64(skipped+used)
	if read := buf[:skipped+used]; len(read) > 0 {
		fl.seen = append(fl.seen[:0], read[max(0, len(read)-followSeen):]...)
	}
	if reread && fl.last > 0 && len(entries) > 0 {
		fl.last = fl.resume(entries)
	}
	for _, e := range entries {
		if e.Iteration <= fl.last {
			continue
		}
		fl.last = e.Iteration
		if len(fl.passed) == followKept {
			fl.passed = append(fl.passed[:0], fl.passed[1:]...)
		}
		fl.passed = append(fl.passed, passedOn{e.Iteration, string(Format(e))})
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// rewritten reports whether the bytes before where the last read ended
// are no longer those it read.
func (fl *Follower) rewritten(f *os.File) bool {
	if len(fl.seen) == 0 {
		return false
	}
	back := make([]byte, len(fl.seen))
	_, err := f.ReadAt(back, fl.off-int64(len(back)))
	return err != nil || !bytes.Equal(back, fl.seen)
}

// resume returns the number to carry on after in entries, the file read
// again from its start: the newest entry passed on that the file still
// holds as it was; with none, the newest entry numbered below those passed
// on, which were all rewritten; with none passed on by this Follower, the
// last one passed on before it, or the file's newest entry once that is
// gone (the ledger was started over).
func (fl *Follower) resume(entries []Entry) int {
	holds := make(map[int]string, len(entries))
	for _, e := range entries {
		holds[e.Iteration] = string(Format(e))
	}
	for i := len(fl.passed) - 1; i >= 0; i-- {
		if p := fl.passed[i]; holds[p.n] == p.text {
			return p.n
		}
	}
	if len(fl.passed) > 0 {
		below := 0
		for _, e := range entries {
			if e.Iteration < fl.passed[0].n {
				below = max(below, e.Iteration)
			}
		}
		return below
	}
	if _, ok := holds[fl.last]; ok {
		return fl.last
	}
	return entries[len(entries)-1].Iteration
}

// scanEntries returns the complete entries in buf, which starts at the
// beginning of a line, and how many bytes of it are settled: everything
// before an unfinished last entry, or before an unfinished last line.
func scanEntries(buf []byte) (entries []Entry, used int) {
	var cur *entryParser
	curStart := 0
	for pos := 0; ; {
		nl := bytes.IndexByte(buf[pos:], '\n')
		if nl < 0 {
			break
		}
		line := trimEOL(string(buf[pos : pos+nl]))
		lineStart := pos
		pos += nl + 1
		if p, ok := startEntry(line); ok {
			cur, curStart = p, lineStart
			continue
		}
		if cur == nil {
			used = pos
			continue
		}
		cur.line(line)
		if cur.closed {
			if e, ok := cur.entry(); ok {
				entries = append(entries, e)
			}
			cur, used = nil, pos
		}
	}
	if cur != nil {
		used = curStart
	}
	return entries, used
}
