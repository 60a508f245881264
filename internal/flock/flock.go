//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

// Package flock takes exclusive advisory locks on open files. A flock
// belongs to the open file description, so a second open of the same file
// in the same process is refused too, and the kernel releases it when the
// file is closed or the process dies, even by SIGKILL. Where the system has
// no flock, locks are not taken: ralph still runs there, but nothing keeps
// two of them apart.
package flock

import (
	"errors"
	"os"
	"syscall"
)

// ErrLocked is returned by Lock without wait when another holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock takes an exclusive lock on f, waiting for it when wait is set, and
// returning ErrLocked at once otherwise. Closing f releases it.
func Lock(f *os.File, wait bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = LockDescriptor(int(fd), wait) }); err != nil {
		return err
	}
	return lerr
}

// LockDescriptor is Lock for a bare descriptor: closing it releases the
// lock.
func LockDescriptor(fd int, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(fd, how)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrLocked
		}
		return err
	}
}
