package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the system to start writing the n bytes of f at
// off to the disk, without waiting for it (sync_file_range). It is only
// a hint, which a test may replace: the sync after it is what makes the
// file durable, and reports what went wrong.
var startWriteback = func(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
