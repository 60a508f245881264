//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package flock

import (
	"errors"
	"os"
)

// ErrLocked is returned by Lock without wait when another holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock does nothing where flock is not available (see the package comment).
func Lock(f *os.File, wait bool) error { return nil }

// LockDescriptor does nothing where flock is not available.
func LockDescriptor(fd int, wait bool) error { return nil }
