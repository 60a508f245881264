package loop

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// moveWatch is a kqueue that watches directories for being moved or
// removed themselves, and for nothing else: a check that creates or
// writes files in them sets off no event. The kernel keeps what happened
// to each directory until moved asks: no goroutine follows it meanwhile.
type moveWatch struct {
	kq  int
	fds map[uint64]int // a directory's descriptor → index in the paths watched
}

// watchMoves begins to watch the directories at paths.
func watchMoves(paths []string) (*moveWatch, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, fmt.Errorf("watch the directories of protected files: %w", err)
	}
	unix.CloseOnExec(kq)
	w := &moveWatch{kq: kq, fds: make(map[uint64]int, len(paths))}
	changes := make([]unix.Kevent_t, 0, len(paths))
	for i, p := range paths {
		fd, err := unix.Open(p, unix.O_EVTONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
		w.fds[uint64(fd)] = i
		var ev unix.Kevent_t
		unix.SetKevent(&ev, fd, unix.EVFILT_VNODE, unix.EV_ADD|unix.EV_CLEAR)
		ev.Fflags = unix.NOTE_RENAME | unix.NOTE_DELETE | unix.NOTE_REVOKE
		changes = append(changes, ev)
	}
	if _, err := unix.Kevent(kq, changes, nil, nil); err != nil {
		w.close()
		return nil, fmt.Errorf("watch the directories of protected files: %w", err)
	}
	return w, nil
}

// moved are the indexes of the paths whose directories were moved or
// removed since watchMoves.
func (w *moveWatch) moved() ([]int, error) {
	evs := make([]unix.Kevent_t, len(w.fds))
	for {
		n, err := unix.Kevent(w.kq, nil, evs, &unix.Timespec{})
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the watch of the directories of protected files: %w", err)
		}
		var which []int
		for _, ev := range evs[:n] {
			if i, ok := w.fds[uint64(ev.Ident)]; ok && ev.Fflags&(unix.NOTE_RENAME|unix.NOTE_DELETE|unix.NOTE_REVOKE) != 0 {
				which = append(which, i)
			}
		}
		return which, nil
	}
}

// close ends the watch.
func (w *moveWatch) close() {
	for fd := range w.fds {
		unix.Close(int(fd))
	}
	unix.Close(w.kq)
}
