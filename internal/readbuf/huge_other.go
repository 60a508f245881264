//go:build !linux

package readbuf

// fresh returns an empty buffer with room for n bytes.
func fresh(n int) []byte { return make([]byte, 0, n) }
