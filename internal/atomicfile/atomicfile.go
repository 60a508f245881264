// Package atomicfile replaces files atomically so that a crash or a failed write
// never leaves a torn file: readers see either the old content or the new, whole.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/ralph-harness/ralph/internal/durable"
	"github.com/ralph-harness/ralph/internal/readbuf"
)

// syncFile flushes a file to stable storage. It is a variable so that a test can
// make the write fail after the data went into the temp file, the one failure
// that root cannot provoke with permissions.
var syncFile = (*os.File).Sync

// SetSync makes sync do every sync of a file or directory this package
// makes, until the function it returns puts the real one back: for a test
// of a package that saves through this one, to make a sync fail.
func SetSync(sync func(*os.File) error) (restore func()) {
	orig := syncFile
	syncFile = sync
	return func() { syncFile = orig }
}

// Write replaces the file at path with data. The data goes to a temp file in the
// same directory, which is synced and renamed over path, so path always holds
// either the old or the new content. An existing file keeps its mode; a new one
// gets perm. If path is a symlink, the file it points to is replaced and the link
// is kept. On failure the temp file is removed and path is left untouched.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteQueued(path, perm, nil, data)
}

// WriteQueued is Write with the last sync, the directory's that makes the
// rename durable, queued on q (see package durable): path holds the new
// content when it returns, and holds it after a crash of the machine once
// q has run the sync. A nil q syncs at once, as Write does.
//
// The content is the pieces of text one after another, so that a caller
// whose new text is mostly an old one's need not copy it into one buffer
// first.
func WriteQueued(path string, perm os.FileMode, q *durable.Queue, text ...[]byte) error {
	return write(path, perm, q, pieces(text))
}

// pieces is the content that is the pieces of text one after another.
func pieces(text [][]byte) func(io.Writer) error {
	return func(w io.Writer) error {
		for _, p := range text {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		return nil
	}
}

// Copy is Write with the content read from r to its end, for a content too
// large to hold in memory.
func Copy(path string, r io.Reader, perm os.FileMode) error {
	return write(path, perm, nil, func(w io.Writer) error {
		_, err := io.Copy(w, r)
		return err
	})
}

// write replaces the file at path with what content writes, as Write says.
func write(path string, perm os.FileMode, q *durable.Queue, content func(io.Writer) error) error {
	p, err := stage(path, perm, content)
	if err != nil {
		return err
	}
	return p.install(q)
}

// install renames the temp file tmp, whose content is durable, over
// target, the file path resolved to, and makes the rename durable: the
// directory's sync, after linked's when linked is the temp file given its
// name after its own sync (see Pending), is queued on q. The temp file is
// removed when the rename fails.
func install(path, tmp, target string, q *durable.Queue, linked *os.File) error {
	// Freeing the old file's blocks is part of the rename unless the old
	// file is still open; with a queue, it stays open until the queue
	// closes it, so that the queue pays for freeing them. Its bare
	// descriptor is enough for that (see readbuf.Descriptor).
	prev := -1
	if q != nil {
		prev, _ = readbuf.Descriptor(target)
	}
	release := func() {
		if prev >= 0 {
			syscall.Close(prev)
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		release()
		os.Remove(tmp)
		return err
	}
	// The rename is durable only once the directory entry is on disk.
	return q.Do(func() error {
		// The old file's pages and blocks are freed while the syncs
		// run: for a large file that takes as long as they do (a
		// discard of its blocks, on this disk). The queue's work is done
		// once they are: whoever waits for it finds the file let go of.
		freed := inBackground(release)
		defer freed()
		var err error
		if linked != nil {
			// The file's count of names is in its inode, which its own
			// sync wrote before it had one.
			err = syncFile(linked)
			if cerr := linked.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil {
			err = syncDir(filepath.Dir(target))
		}
		if err != nil && q != nil {
			// The queue's error reaches whoever waits for it: it names
			// the file, as WriteQueued's own errors do.
			err = fmt.Errorf("write %s: %w", path, err)
		}
		return err
	})
}

// inBackground starts fn and returns what waits for it to return. A
// variable, so that a test can have fn run only when waited for: a caller
// that did not wait would let it go undone.
var inBackground = func(fn func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	return func() { <-done }
}

// fill writes the content to the temp file f, gathering small writes into
// writes of 64 KiB, and makes it durable with its final mode.
//
// A large file is handed to the disk as it is written, a part at a time
// (see writeback): the sync then waits for the last part only, not for the
// whole file, whose writing to the disk would begin with it.
func fill(f *os.File, content func(io.Writer) error, mode os.FileMode) error {
	w := writers.Get().(*bufio.Writer)
	w.Reset(&writeback{f: f})
	defer func() {
		w.Reset(nil)
		writers.Put(w)
	}()
	if err := content(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; set the final mode before the sync so that
	// the mode is as durable as the data.
	if err := f.Chmod(mode); err != nil {
		return err
	}
	return syncFile(f)
}

// writebackPart is how much of a file fill writes before asking the
// system to start writing it to the disk: files smaller than that, nearly
// every one, are left to the sync alone.
const writebackPart = 1 << 20

// writeback is a file being written by fill, whose written parts are
// handed to the disk every writebackPart bytes (startWriteback).
type writeback struct {
	f       *os.File
	written int64 // bytes written
	started int64 // bytes handed to the disk
}

func (w *writeback) Write(p []byte) (int, error) {
	// A piece longer than a part (Marshal hands over the unchanged
	// stories of a large prd.json as one) is written a part at a time,
	// so that the disk writes the first while the next are copied.
	n := 0
	for len(p) > 0 {
		part := p[:min(int64(len(p)), writebackPart-(w.written-w.started))]
		m, err := w.f.Write(part)
		n += m
		w.written += int64(m)
		if w.written-w.started >= writebackPart {
			startWriteback(w.f, w.started, w.written-w.started)
			w.started = w.written
		}
		if err != nil {
			return n, err
		}
		p = p[m:]
	}
	return n, nil
}

// writers are fill's buffers, used again: the loop saves prd.json in every
// iteration.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// resolve returns the file to replace (path, or the file a symlink at path
// points to) and the mode to give it: the existing file's, else perm.
func resolve(path string, perm os.FileMode) (string, os.FileMode, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, perm, nil
	}
	if err != nil {
		return "", 0, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// Renaming over the link would replace it with a regular file.
		target, err := filepath.EvalSymlinks(path)
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, errors.New("dangling symlink")
		}
		if err != nil {
			return "", 0, err
		}
		if fi, err = os.Stat(target); err != nil {
			return "", 0, err
		}
		path = target
	}
	if !fi.Mode().IsRegular() {
		return "", 0, errors.New("not a regular file")
	}
	return path, fi.Mode().Perm(), nil
}

// syncDir syncs the directory dir; its errors name it.
func syncDir(dir string) error {
	d, err := readbuf.Open(dir)
	if err != nil {
		return err
	}
	err = syncFile(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// tempPrefix is the prefix of the temp files Write makes for the file named
// base; os.CreateTemp adds a random suffix.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// RemoveTemps removes the temp files that Writes of path left behind when
// the process was killed between creating one and renaming it (a Write that
// fails removes its own), and returns the paths it removed. Only call it
// when no Write of path can be running: it cannot tell a leftover from a
// temp file that is being written.
func RemoveTemps(path string) ([]string, error) {
	target, _, err := resolve(path, 0)
	if err != nil {
		// A dangling link or a missing directory leaves nothing to find
		// beside the target; look beside path itself.
		target = path
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("remove temp files of %s: %w", path, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, tempPrefix(base)) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("remove temp files of %s: %w", path, err)
	}
	return removed, nil
}
