//go:build !linux

package proc

import "os"

// pipe makes a pipe for a child's standard stream; parentReads says which
// end is ralph's.
func pipe(parentReads bool) (parent, child *os.File, err error) {
	r, w, err := os.Pipe()
	if parentReads {
		return r, w, err
	}
	return w, r, err
}

// measuresPipes says that pending cannot tell how much a pipe holds here.
const measuresPipes = false

// pending reports that it does not know how much a pipe holds.
func pending(*os.File) (int, bool) { return 0, false }
