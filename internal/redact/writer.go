package redact

import (
	"bytes"
	"io"
)

// Writer passes what is written to it on to another writer with every
// secret replaced (see Redactor.Writer).
type Writer struct {
	r    *Redactor
	w    io.Writer
	held []byte // the end of what was written that may begin a secret
	buf  []byte // held and the next write, together
}

// Writer returns a writer that passes what is written to it on to w with
// every secret replaced, for output shown as it comes, in which a secret
// may arrive in pieces, over several writes. The end of a write that may
// be the start of a secret is held back until the next write tells whether
// it is, or until Flush; the rest is passed on at once.
func (r *Redactor) Writer(w io.Writer) *Writer { return &Writer{r: r, w: w} }

func (sw *Writer) Write(p []byte) (int, error) {
	r := sw.r
	if r == nil || r.r == nil {
		return sw.w.Write(p)
	}
	data := p
	if len(sw.held) > 0 {
		sw.buf = append(append(sw.buf[:0], sw.held...), p...)
		data = sw.buf
	}
	cut := r.safeCut(data)
	err := sw.pass(data[:cut])
	sw.held = append(sw.held[:0], data[cut:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush passes on what Write held back.
func (sw *Writer) Flush() error {
	err := sw.pass(sw.held)
	sw.held = sw.held[:0]
	return err
}

// pass writes b on, with its secrets replaced. Most output has none, and
// goes as it is.
func (sw *Writer) pass(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	for _, s := range sw.r.secrets {
		if s.in(b) {
			_, err := sw.r.r.WriteString(sw.w, string(b))
			return err
		}
	}
	_, err := sw.w.Write(b)
	return err
}

// safeCut returns where b can be cut so that replacing the secrets of each
// part comes to the same as replacing those of the whole, whatever follows
// b: not inside any secret, nor in an end of b that may begin one. (A cut
// inside a secret that holds a shorter one would let the part before it
// replace the shorter.)
func (r *Redactor) safeCut(b []byte) int {
	cut := len(b) - r.startOfSecret(b)
	for moved := true; moved; {
		moved = false
		for _, s := range r.secrets {
			n := len(s.value)
			lo := max(0, cut-n+1)
			if i := bytes.Index(b[lo:min(len(b), cut+n-1)], s.bytes); i >= 0 && lo+i < cut {
				cut, moved = lo+i, true
			}
		}
	}
	return cut
}

// startOfSecret returns the length of the longest end of b that begins a
// secret without being all of it; 0 when none does.
func (r *Redactor) startOfSecret(b []byte) int {
	if len(r.secrets) == 0 {
		return 0
	}
	// The secrets are sorted longest first.
	for n := min(len(b), len(r.secrets[0].value)-1); n > 0; n-- {
		end := b[len(b)-n:]
		for _, s := range r.secrets {
			if n < len(s.value) && end[0] == s.value[0] && string(end) == s.value[:n] {
				return n
			}
		}
	}
	return 0
}
