package prd

import (
	"errors"
	"io/fs"

	"github.com/ralph-harness/ralph/internal/atomicfile"
)

// RemoveTemps removes the temp files that a save of the file at path left
// behind when its process was killed before the rename, and returns their
// paths. It holds the lock Update holds, so a save that is running (a
// person's `ralph task` edit, say) is waited for, not cut short. Without the
// file there is no save to wait for.
func RemoveTemps(path string) ([]string, error) {
	unlock, err := Lock(path)
	switch {
	case err == nil:
		defer unlock()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return atomicfile.RemoveTemps(path)
}
