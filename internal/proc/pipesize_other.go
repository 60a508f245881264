//go:build !linux

package proc

import "os"

// GrowPipe leaves the pipe as it is: only Linux can grow one.
func GrowPipe(*os.File) {}

// fitPipe reports that nothing is known to fit in the pipe w is the write
// end of: its size cannot be asked.
func fitPipe(*os.File, int) bool { return false }
