//go:build !linux

package proc

import "errors"

// KillStrays finds nothing where there is no /proc to look in: there, what
// a killed ralph's agent left running must be stopped by hand.
func KillStrays(dir string, env []string) ([]int, error) { return nil, nil }

// Holders cannot tell who has a file open where there is no /proc.
func Holders(path string) ([]int, error) {
	return nil, errors.New("cannot tell which processes have a file open on this system")
}
