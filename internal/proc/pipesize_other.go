//go:build !linux

package proc

import (
	"io"
	"os"
)

// GrowPipe leaves the pipe as it is: only Linux can grow one.
func GrowPipe(*os.File) {}

// prefill makes nothing: the size of a pipe cannot be asked, so the
// input is copied as the child reads it.
func prefill(io.Reader) (child *os.File, ok bool, err error) { return nil, false, nil }
