package atomicfile

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a new regular file without a name in dir, for writing
// (O_TMPFILE).
func openUnnamed(dir string, mode os.FileMode) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(mode.Perm()))
	if err != nil {
		if err == unix.EISDIR || err == unix.EOPNOTSUPP {
			// The kernel or the file system does not know O_TMPFILE.
			err = errors.ErrUnsupported
		}
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir+"/(unnamed)"), nil
}

// linkUnnamed gives f, opened by openUnnamed, the name path, which must not
// exist. Its link through /proc/self/fd needs no privilege, which
// AT_EMPTY_PATH would.
func linkUnnamed(f *os.File, path string) error {
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); err != nil {
		return &os.LinkError{Op: "link", Old: proc, New: path, Err: err}
	}
	return nil
}
