package agent

import (
	"bytes"
	"io"
)

// stderrNoise is, by output format, a line that a CLI writes to its
// stderr in every run and that tells a person watching ralph nothing:
// codex reads its stdin "for additional input" even with the prompt as an
// argument, and says so, though ralph leaves that stdin empty. The line
// is kept in Result.Stderr; it is only not shown.
var stderrNoise = map[Format]string{
	CodexJSON: "Reading additional input from stdin...",
}

// lineDropper passes on to w what is written to it, except each whole
// line that is line, ended by "\n" or "\r\n". The start of a line that
// could still be that one is held back until it ends or differs; flush
// passes on what is held when the output ends.
type lineDropper struct {
	w    io.Writer
	line string
	held []byte // the current line's start, while it is line's start
	mid  bool   // the current line is not line: passed on to its end
}

func (d *lineDropper) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if d.mid {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				_, err := d.w.Write(p)
				return n, err
			}
			if _, err := d.w.Write(p[:i+1]); err != nil {
				return n, err
			}
			p, d.mid = p[i+1:], false
			continue
		}
		c, k := p[0], len(d.held)
		switch {
		case k < len(d.line) && c == d.line[k], k == len(d.line) && c == '\r':
			d.held = append(d.held, c)
			p = p[1:]
		case k >= len(d.line) && c == '\n':
			d.held = d.held[:0] // the line, left out
			p = p[1:]
		default:
			// Another line: what was held is its start, and c goes on
			// with it.
			d.mid = true
			if err := d.flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// flush passes on what is held back: at the end of the output, a line
// cut short that might have been the one left out.
func (d *lineDropper) flush() error {
	if len(d.held) == 0 {
		return nil
	}
	_, err := d.w.Write(d.held)
	d.held = d.held[:0]
	return err
}
