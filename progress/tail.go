package progress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/internal/textcut"
)

// blockSize is how much TailFunc reads at a time. Entries are a few hundred
// bytes to a few kilobytes, so one block usually holds the last several.
const blockSize = 64 << 10

// entrySize is what Tail reads at first for each entry it is asked for: a
// large entry. A block of blockSize holds over a hundred small ones, all of
// which would be looked at for their start markers to hand out a few.
const entrySize = 2 << 10

// Tail returns up to n last complete entries of the file at path, oldest
// first. It reads backwards from the end in blocks, so its cost depends on the
// size of the entries returned, not on the size of the file. A missing file
// holds no entries.
func Tail(path string, n int) ([]Entry, error) {
	return TailContext(context.Background(), path, n)
}

// TailContext is Tail that gives up once ctx is done, returning its error:
// a person's large n (`ralph log -n 1000000`) reads a long ledger whole,
// which a signal must not have to wait out.
func TailContext(ctx context.Context, path string, n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	var entries []Entry
	// n is the person's (`ralph log -n`): n*entrySize may overflow.
	err := tailFunc(path, 0, min(n, blockSize/entrySize)*entrySize, func(e Entry) bool {
		if ctx.Err() != nil {
			return false
		}
		entries = append(entries, e)
		return len(entries) < n
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	return entries, nil
}

// TailFunc walks the complete entries of the file at path backwards from the
// end, newest first, calling fn for each until fn returns false or maxBytes of
// the file have been read (0: no bound). A missing file holds no entries.
func TailFunc(path string, maxBytes int64, fn func(Entry) bool) error {
	return tailFunc(path, maxBytes, blockSize, fn)
}

func tailFunc(path string, maxBytes int64, block int, fn func(Entry) bool) error {
	return walkBack(path, maxBytes, block, func(seg []byte) bool {
		e, ok := parseSegment(seg)
		return !ok || fn(e)
	})
}

// walkBack cuts the file at path into segments, each a start marker line and
// what follows it up to the next, and calls fn for each, newest first, until
// fn returns false or maxBytes of the file have been read (0: no bound).
func walkBack(path string, maxBytes int64, block int, fn func(seg []byte) bool) error {
	f, st, err := readbuf.OpenFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, bare(err))
	}
	defer f.Close()
	// buf holds the part of the file from off that has not yet been cut
	// into entries: everything before the earliest start marker found.
	off := st.Size()
	var buf []byte
	var read int64
	for {
		ss := starts(buf, off == 0)
		for k := len(ss) - 1; k >= 0; k-- {
			if !fn(buf[ss[k]:]) {
				return nil
			}
			buf = buf[:ss[k]]
		}
		if off == 0 || (maxBytes > 0 && read >= maxBytes) {
			return nil
		}
		// Read at least as much as is pending, so that an entry larger
		// than a block costs a doubling series of reads, not a quadratic
		// one.
		n := int64(max(block, len(buf)))
		if maxBytes > 0 {
			n = min(n, maxBytes-read)
		}
		n = min(n, off)
		next := make([]byte, int(n)+len(buf))
		if _, err := f.ReadAt(next[:n], off-n); err != nil {
			return fmt.Errorf("read %s: %w", path, bare(err))
		}
		copy(next[n:], buf)
		buf, off, read = next, off-n, read+n
	}
}

var startNeedle = []byte("\n" + startPrefix)

// starts returns the offsets in buf of the start marker lines, in order. A
// line at offset 0 counts only when it is the start of the file: otherwise
// its beginning may not have been read yet. It searches forwards (a
// backward search is several times slower): reading a long ledger back
// costs little more than reading it.
func starts(buf []byte, fileStart bool) []int {
	var ss []int
	valid := func(start int) bool {
		line := buf[start:]
		if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
			line = line[:nl]
		}
		// Only ok is used, so the line need not be copied into a string
		// of its own: a ledger has thousands of markers.
		_, _, _, ok := parseStart(trimEOL(unsafe.String(unsafe.SliceData(line), len(line))))
		return ok
	}
	if fileStart && bytes.HasPrefix(buf, startNeedle[1:]) && valid(0) {
		ss = append(ss, 0)
	}
	for i := 0; ; {
		j := bytes.Index(buf[i:], startNeedle)
		if j < 0 {
			return ss
		}
		i += j + 1
		if valid(i) {
			ss = append(ss, i)
		}
	}
}

// headSlack is how far past its limit ReadHead reads to find the start marker that
// ends the head, so that one huge line cannot make it read the whole file.
const headSlack = 64 << 10

// ReadHead returns the head of the file at path (the free text before the
// first entry or started marker), at most limit bytes; limit <= 0 means no bound. A longer head is
// cut at a line boundary and ends with a note saying so. A missing file has an
// empty head.
func ReadHead(path string, limit int) (string, error) {
	f, _, err := readbuf.OpenFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read head of %s: %w", path, bare(err))
	}
	defer f.Close()
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, int64(limit)+headSlack)
	}
	br := bufio.NewReader(r)
	var head strings.Builder
	for {
		line, err := br.ReadString('\n')
		if ledgerLine(line) {
			break
		}
		head.WriteString(line)
		if limit > 0 && head.Len() > limit {
			return cutHead(head.String(), filepath.Base(path), limit), nil
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read head of %s: %w", path, bare(err))
		}
	}
	return head.String(), nil
}

// ledgerLine reports whether line (its end of line included or not) is
// where the ledger begins: an entry's start marker or an iteration's
// started marker. Everything before the first such line is the head.
func ledgerLine(line string) bool {
	line = trimEOL(line)
	if _, _, _, ok := parseStart(line); ok {
		return true
	}
	return isMark(line)
}

// SplitHead cuts the text of a progress.txt into its head, the people's,
// and the ledger, ralph's, at the line ReadHead stops at.
func SplitHead(data []byte) (head, ledger []byte) {
	for off := 0; off < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		if ledgerLine(string(data[off:end])) {
			return data[:off], data[off:]
		}
		off = end
	}
	return data, nil
}

// HeadAround returns the head to rebuild a progress.txt with, whose ledger
// was rewritten and goes back to oldLedger: now's text before the ledger as
// it was (found by its first line, the last time that line is in now), else
// now's own head. Any line in it that would read as the ledger's start is
// left out. So a line forged in the middle of the head, which SplitHead
// would take for the start of the ledger, costs the people none of the
// notes after it.
func HeadAround(now, oldLedger []byte) []byte {
	region, _ := SplitHead(now)
	if first, _, _ := bytes.Cut(oldLedger, []byte("\n")); len(first) > 0 {
		at := bytes.LastIndex(now, append(append([]byte("\n"), first...), '\n'))
		if at >= 0 && at+1 > len(region) {
			region = now[:at+1]
		}
	}
	head := make([]byte, 0, len(region))
	for line := range bytes.Lines(region) {
		if !ledgerLine(string(line)) {
			head = append(head, line...)
		}
	}
	return head
}

// cutHead cuts head to at most limit bytes, note included: at the end of a
// line, unless that would drop more than half of what fits (a long line),
// then inside the line, on a rune's boundary, marked with "…". When limit
// is too small even for the note, the note alone is returned.
func cutHead(head, name string, limit int) string {
	note := fmt.Sprintf("[the head of %s is longer than %d bytes; the rest is cut]\n", name, limit)
	keep := head[:min(len(head), max(0, limit-len(note)))]
	if i := strings.LastIndexByte(keep, '\n'); i >= len(keep)/2 {
		keep = keep[:i+1]
	} else if len(keep) > len("…\n") {
		keep = textcut.Head(keep, len(keep)-1, "…") + "\n"
	} else {
		keep = ""
	}
	return keep + note
}
