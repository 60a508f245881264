package loop

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// moveWatch is an inotify instance that watches directories for being
// moved or removed themselves, and for nothing else: a check that creates
// or writes files in them queues no event. The kernel queues the events as
// they happen, and moved reads them after the checks: no goroutine follows
// them meanwhile.
type moveWatch struct {
	fd  int
	wds map[int32]int // watch descriptor → index in the paths watched
}

// watchMoves begins to watch the directories at paths.
func watchMoves(paths []string) (*moveWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch the directories of protected files: %w", err)
	}
	w := &moveWatch{fd: fd, wds: make(map[int32]int, len(paths))}
	for i, p := range paths {
		wd, err := unix.InotifyAddWatch(fd, p, unix.IN_MOVE_SELF|unix.IN_DELETE_SELF)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
		w.wds[int32(wd)] = i
	}
	return w, nil
}

// moved are the indexes of the paths whose directories were moved or
// removed since watchMoves. A queue that overflowed holds such events
// already, the only ones it is sent: none is lost that would tell more.
func (w *moveWatch) moved() ([]int, error) {
	var which []int
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(w.fd, buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return which, nil
		case err != nil:
			return which, fmt.Errorf("read the watch of the directories of protected files: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			if i, ok := w.wds[wd]; ok && mask&(unix.IN_MOVE_SELF|unix.IN_DELETE_SELF) != 0 {
				which = append(which, i)
			}
			off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
		}
	}
}

// close ends the watch.
func (w *moveWatch) close() { unix.Close(w.fd) }
