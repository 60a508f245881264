// Package readbuf reads whole files into buffers that are used again: the
// loop reads the same few files several times an iteration, and fresh
// memory for every read (zeroed, faulted in, then collected) costs more
// than the read itself.
package readbuf

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"github.com/ralph-harness/ralph/internal/huge"
)

// ErrNotRegular is why ReadFile refuses a named pipe, a device or a socket:
// reading one may never end.
var ErrNotRegular = errors.New("not a regular file")

// Open opens the file at path for reading, as os.Open does but for the
// setup of non-blocking I/O that os.Open attempts on every file and undoes
// for a regular one (five system calls for nothing); the loop opens its
// files a dozen times an iteration. The open itself does not block: a named
// pipe in place of a file would otherwise hold it until something writes
// to the pipe. Reads block, as a regular file's do anyway. Errors are
// *fs.PathError, as os.Open's.
func Open(path string) (*os.File, error) {
	fd, err := open(path)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Descriptor is Open for a caller that needs only the descriptor, and
// closes it itself (syscall.Close): an *os.File costs two system calls more
// (os.NewFile looks at the descriptor's flags, then tries the poller,
// which a regular file refuses) and a finalizer.
func Descriptor(path string) (int, error) { return open(path) }

// Resolve returns the path of the file the descriptor fd is, when the file
// at path is still that file (path itself), or a link that leads to it
// (then the file's path, through every link): "" when a rename replaced
// it, or the link was changed, since fd was opened. Where path is no link
// it takes two system calls (fstat, lstat). Errors are *fs.PathError.
func Resolve(fd int, path string) (string, error) {
	var held, now syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &held) }); err != nil {
		return "", &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := ignoringEINTR(func() error { return syscall.Lstat(path, &now) }); err != nil {
		return "", &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	file := path
	if now.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", err
		}
		if err := ignoringEINTR(func() error { return syscall.Stat(target, &now) }); err != nil {
			return "", &fs.PathError{Op: "stat", Path: target, Err: err}
		}
		file = target
	}
	if held.Dev != now.Dev || held.Ino != now.Ino {
		return "", nil
	}
	return file, nil
}

// open is Open's system call, without the *os.File.
func open(path string) (int, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// OpenFile is Open for a file to be read to its end: it returns the file's
// information too, and refuses one whose reading may never end (a named
// pipe, a device, a socket) with ErrNotRegular, and a directory with
// syscall.EISDIR, as a read of it would.
func OpenFile(path string) (*os.File, fs.FileInfo, error) {
	f, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	switch {
	case err != nil:
	case info.IsDir():
		err = unreadable(path, true)
	case info.Mode()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0:
		err = unreadable(path, false)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// unreadable is why the file at path, not a regular file, is not read to
// its end: a directory reads as syscall.EISDIR; a named pipe, a device or
// a socket may never end.
func unreadable(path string, dir bool) error {
	if dir {
		return &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	}
	return &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
}

// ReadFile reads the file at path into buf's room, growing it when the file
// is larger, and returns what it read. The result shares memory with buf:
// buf may not be used again while the result is (buf may be nil). Errors
// are os.ReadFile's, and ErrNotRegular (in an *fs.PathError) for a file
// whose reading may never end.
//
// It works on the descriptor alone: an *os.File would cost a descriptor
// check, a try at the poller and a finalizer for every read.
func ReadFile(buf []byte, path string) ([]byte, error) {
	fd, st, err := openRegular(path)
	if err != nil {
		return buf[:0], err
	}
	defer syscall.Close(fd)
	buf = buf[:0]
	// One byte more than the file, so that the read that finds the end
	// needs no room of its own; a buffer that must grow gets a quarter
	// more, as the files read again and again grow a little every time.
	// Only fresh memory is read in halves (see readHalves).
	if size := st.Size; size < 1<<40 && int64(cap(buf)) < size+1 {
		buf = fresh(int(size + size/4 + 512))
		if size >= halvesMin && runtime.GOMAXPROCS(0) >= 2 {
			buf = readHalves(fd, buf, int(size))
		}
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = syscall.Read(fd, buf[len(buf):cap(buf)])
			return err
		})
		if err != nil {
			return buf, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// ReadEach reads the file at path to its end, a piece at a time, through a
// buffer used again, and hands each piece to fn, which may not keep it: for
// a file that is read through rather than kept, however large (a sum). It
// returns how much it read. Errors are ReadFile's.
func ReadEach(path string, fn func([]byte)) (n int64, err error) {
	fd, _, err := openRegular(path)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	buf := pieces.Get().(*[]byte)
	defer pieces.Put(buf)
	for {
		var m int
		err := ignoringEINTR(func() (err error) {
			m, err = syscall.Read(fd, *buf)
			return err
		})
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return n, nil
		}
		fn((*buf)[:m])
		n += int64(m)
	}
}

// pieces are ReadEach's buffers.
var pieces = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// openRegular opens the file at path, as open does, and returns its
// status: a file whose reading may never end (a named pipe, a device, a
// socket) is ErrNotRegular, and a directory is refused as os.ReadFile
// refuses one, neither left open.
func openRegular(path string) (int, syscall.Stat_t, error) {
	var st syscall.Stat_t
	fd, err := open(path)
	if err != nil {
		return -1, st, err
	}
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		syscall.Close(fd)
		return -1, st, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFREG {
		syscall.Close(fd)
		return -1, st, unreadable(path, kind == syscall.S_IFDIR)
	}
	return fd, st, nil
}

// fresh returns an empty buffer with room for at least n bytes: from a
// huge page on, whole huge pages, advised as such (see huge.Make). A read
// into fresh memory then takes a fault for every two megabytes rather
// than for every four kilobytes.
func fresh(n int) []byte { return huge.Make[byte](n)[:0] }

// halvesMin is the size from which a file read into fresh memory is read
// in two halves at once (see readHalves).
const halvesMin = 1 << 20

// readHalves reads the first size bytes of the file fd into buf's room, its
// two halves at once: the pages of a fresh buffer, which the kernel zeroes
// and maps one by one as the read fills them, cost more than the copy, and
// two CPUs share them. It returns buf with what it read and leaves fd's
// offset just past it, or returns buf empty, fd's offset unmoved, when the
// file is now shorter than size or a read failed: the caller reads it
// again from the start, on its own.
func readHalves(fd int, buf []byte, size int) []byte {
	half := size / 2
	var n2 int
	var err2 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n2, err2 = preadFull(fd, buf[half:size], int64(half))
	}()
	n1, err1 := preadFull(fd, buf[:half], 0)
	<-done
	if err1 != nil || err2 != nil || n1 != half || n2 != size-half {
		return buf[:0]
	}
	if _, err := syscall.Seek(fd, int64(size), io.SeekStart); err != nil {
		return buf[:0]
	}
	return buf[:size]
}

// preadFull reads from the file fd at off until p is full or the file
// ends, and returns how much it read.
func preadFull(fd int, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		var m int
		err := ignoringEINTR(func() (err error) {
			m, err = syscall.Pread(fd, p[n:], off+int64(n))
			return err
		})
		if err != nil || m == 0 {
			return n, err
		}
		n += m
	}
	return n, nil
}

// ignoringEINTR calls fn again for as long as a signal interrupts it.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != syscall.EINTR {
			return err
		}
	}
}
