package prd

import (
	"path/filepath"

	"github.com/ralph-harness/ralph/internal/atomicfile"
)

// RemoveTemps removes the temp files that a save of the file at path left
// behind when its process was killed before the rename, and returns their
// paths. It holds the lock Update holds, so a save that is running (a
// person's `ralph task` edit, say) is waited for, not cut short.
func RemoveTemps(path string) ([]string, error) {
	unlock, err := lockDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer unlock()
	return atomicfile.RemoveTemps(path)
}
