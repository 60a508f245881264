//go:build !linux

package huge

// advise does nothing where there is no MADV_HUGEPAGE.
func advise(uintptr, int) {}
