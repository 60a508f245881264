//go:build !linux

package atomicfile

import (
	"errors"
	"os"
)

// openUnnamed fails: only Linux makes files without a name (see Prepare).
func openUnnamed(dir string, _ os.FileMode) (*os.File, error) {
	return nil, &os.PathError{Op: "open", Path: dir, Err: errors.ErrUnsupported}
}

func linkUnnamed(*os.File, string) error { return errors.ErrUnsupported }
