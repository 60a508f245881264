package atomicfile

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a new regular file without a name in dir, for writing
// (O_TMPFILE), and reading back (see Pending.holds).
func openUnnamed(dir string, mode os.FileMode) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, uint32(mode.Perm()))
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
// exist. It links f itself (AT_EMPTY_PATH), as Linux lets the process that
// opened a file do since 6.10, and a privileged one before; otherwise it
// links f through /proc/self/fd, which needs no privilege but costs a walk
// of that path.
func linkUnnamed(f *os.File, path string) error {
	err := unix.Linkat(int(f.Fd()), "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH)
	if err == unix.ENOENT {
		return linkThroughProc(f, path)
	}
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: err}
	}
	return nil
}

// linkThroughProc is linkUnnamed's way where AT_EMPTY_PATH is refused.
func linkThroughProc(f *os.File, path string) error {
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); err != nil {
		return &os.LinkError{Op: "link", Old: proc, New: path, Err: err}
	}
	return nil
}
