//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package progress

import "os"

// lock does nothing where flock is not available: ralph still runs there, but
// nothing stops a second ralph in the same directory.
func lock(f *os.File) error {
	return nil
}
