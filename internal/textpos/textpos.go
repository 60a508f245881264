// Package textpos turns a byte offset in a file's text into the position
// people look for: the file's name, its line and its column.
package textpos

import "fmt"

// At returns "name:line:col" for the byte at offset off of data (clamped to
// the text). Lines and columns count from 1, and columns count
// characters, as editors show them.
func At(name string, data []byte, off int) string {
	off = min(max(off, 0), len(data))
	line, col := 1, 1
	for _, r := range string(data[:off]) {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%s:%d:%d", name, line, col)
}
