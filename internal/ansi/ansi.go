// Package ansi removes the escape sequences that colour a terminal's text:
// programs print them when told to (FORCE_COLOR, --color=yes, a CI job's
// settings) even into a pipe, and what ralph reads in their output (a
// claim, a test runner's summary) is the text between them.
package ansi

import (
	"bytes"
	"strings"
)

const esc = 0x1b

// Append appends b to dst without its control sequences (CSI: ESC '[',
// parameter bytes, intermediate bytes and a final byte, as in "\x1b[1;32m")
// and returns the extended slice. An ESC that starts no whole sequence is
// kept.
func Append(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, esc)
		if i < 0 {
			return append(dst, b...)
		}
		dst = append(dst, b[:i]...)
		n := sequence(b[i:])
		if n == 0 {
			dst = append(dst, esc)
			n = 1
		}
		b = b[i+n:]
	}
}

// String returns s without its control sequences, as Append does; s itself
// when it has none.
func String(s string) string {
	if strings.IndexByte(s, esc) < 0 {
		return s
	}
	return string(Append(make([]byte, 0, len(s)), []byte(s)))
}

// sequence returns the length of the control sequence b starts with, or 0
// when it starts none.
func sequence(b []byte) int {
	if len(b) < 2 || b[0] != esc || b[1] != '[' {
		return 0
	}
	i := 2
	for i < len(b) && 0x30 <= b[i] && b[i] <= 0x3f {
		i++
	}
	for i < len(b) && 0x20 <= b[i] && b[i] <= 0x2f {
		i++
	}
	if i < len(b) && 0x40 <= b[i] && b[i] <= 0x7e {
		return i + 1
	}
	return 0
}
