//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package progress

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an exclusive flock on f without waiting. flock belongs to the
// open file description, so a second Open in the same process is refused
// too, and the kernel releases it when the process dies, even by SIGKILL.
func lock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(lerr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if errors.Is(lerr, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return lerr
}
