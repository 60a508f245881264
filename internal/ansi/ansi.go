// Package ansi removes the escape sequences that colour a terminal's text
// or act on the terminal: programs print them when told to (FORCE_COLOR,
// --color=yes, a CI job's settings) even into a pipe, and what ralph reads
// in their output (a claim, a test runner's summary) is the text between
// them. What ralph shows of such output must not act on the terminal that
// shows it either: a window's title set, the clipboard written (OSC 52), the
// screen reset.
package ansi

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

const esc = 0x1b

// Append appends b to dst without its escape sequences and returns the
// extended slice: a control sequence (CSI: ESC '[', parameter bytes,
// intermediate bytes and a final byte, as in "\x1b[1;32m"), a control
// string (OSC, DCS, SOS, PM, APC: ESC and one of "]PX^_", up to BEL, ST or
// the end of b, as in "\x1b]0;title\x07"), or an escape of one or more
// bytes besides ESC (as "\x1bc", a reset, or "\x1b(B"). An ESC that starts
// no whole sequence is kept.
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

// String returns s without its escape sequences, as Append does; s itself
// when it has none.
func String(s string) string {
	if strings.IndexByte(s, esc) < 0 {
		return s
	}
	return string(Append(make([]byte, 0, len(s)), []byte(s)))
}

// sequence returns the length of the escape sequence b starts with, or 0
// when it starts none (ECMA-48 and ECMA-35).
func sequence(b []byte) int {
	if len(b) < 2 || b[0] != esc {
		return 0
	}
	switch c := b[1]; {
	case c == '[':
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
	case strings.IndexByte("]PX^_", c) >= 0:
		// A control string: a terminal takes all of it, up to its end,
		// as its own, and shows none of it. One cut short is taken to
		// the end of b, as a terminal would; CAN and SUB cancel it.
		for i := 2; i < len(b); i++ {
			switch b[i] {
			case bel, can, sub:
				return i + 1
			case esc:
				// ST ends it; another ESC ends it too, and starts
				// a sequence of its own.
				if i+1 < len(b) && b[i+1] == '\\' {
					return i + 2
				}
				return i
			}
		}
		return len(b)
	case 0x20 <= c && c <= 0x2f:
		// Intermediate bytes, then a final one: a character set
		// chosen, as in ESC ( B.
		i := 2
		for i < len(b) && 0x20 <= b[i] && b[i] <= 0x2f {
			i++
		}
		if i < len(b) && 0x30 <= b[i] && b[i] <= 0x7e {
			return i + 1
		}
		return 0
	case 0x30 <= c && c <= 0x7e:
		// One byte: a reset (ESC c), a cursor saved (ESC 7), a line
		// fed in reverse (ESC M), ...
		return 2
	}
	return 0
}

// Redrawn returns what a terminal shows of a line whose carriage returns
// send the cursor back to its start to write it anew: its last part that is
// not empty ("building 50%\rbuilding 100%" is "building 100%", and so is
// "building 100%\r"). Kept whole, it would be one long line of every
// redraw, whose \r a terminal showing it again would obey, showing some
// of them over the others. (Text a shorter last part does not write over
// is left out: progress bars clear or pad their line.)
func Redrawn(l string) string {
	for {
		i := strings.LastIndexByte(l, '\r')
		if i < 0 {
			return l
		}
		if i < len(l)-1 {
			return l[i+1:]
		}
		l = l[:i]
	}
}

// Controls that end a control string: BEL (as xterm takes it for ST),
// and CAN and SUB, which cancel it.
const (
	bel = 0x07
	can = 0x18
	sub = 0x1a
)

// Printable returns s without the control characters left in it once its
// escape sequences are removed (a bell, a backspace, a lone ESC, the C1
// controls), but for tab and newline: what a terminal may show as it is.
// Invalid UTF-8 becomes U+FFFD. s itself when it has none.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r != '\t' && r != '\n' && unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r != '\t' && r != '\n' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
