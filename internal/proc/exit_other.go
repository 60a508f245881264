//go:build !linux

package proc

// awaitExit returns at once: Wait waits for the child alone.
func awaitExit(pid int) {}
