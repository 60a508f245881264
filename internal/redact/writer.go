package redact

import (
	"bytes"
	"io"
	"slices"
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
	cut, found := r.safeCut(data)
	err := sw.pass(data[:cut], found)
	sw.held = append(sw.held[:0], data[cut:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush passes on what Write held back.
func (sw *Writer) Flush() error {
	if len(sw.held) == 0 {
		return nil
	}
	found := slices.ContainsFunc(sw.r.secrets, func(s secret) bool { return s.index(sw.held, 0) >= 0 })
	err := sw.pass(sw.held, found)
	sw.held = sw.held[:0]
	return err
}

// pass writes b on, with its secrets replaced when it holds any (found) or
// a text cut short (see String), in one write. Most output has neither,
// and goes as it is.
func (sw *Writer) pass(b []byte, found bool) error {
	if len(b) == 0 {
		return nil
	}
	if found || bytes.Contains(b, []byte(ellipsis)) {
		_, err := io.WriteString(sw.w, sw.r.String(string(b)))
		return err
	}
	_, err := sw.w.Write(b)
	return err
}

// safeCut returns where b can be cut so that replacing the secrets of each
// part comes to the same as replacing those of the whole, whatever follows
// b: between the matches the replacement makes, scanning from the start as
// strings.Replacer does (the leftmost match, of the longest secret there),
// and before any end of b that may begin a secret. Cutting inside a
// match, or at every point of an overlapping one (a run of x against a
// secret of x's), could change the matches, or hold everything back.
// found says whether a match comes before the cut.
func (r *Redactor) safeCut(b []byte) (cut int, found bool) {
	n, _ := r.startOfSecret(b)
	limit := len(b) - n
	// The start of a secret before the start of an ellipsis, which may be
	// a cut one (see String), waits for the rest.
	for k := 1; k < len(ellipsis) && k <= len(b); k++ {
		if string(b[len(b)-k:]) == ellipsis[:k] {
			n, _ := r.startOfSecret(b[:len(b)-k])
			limit = min(limit, len(b)-k-n)
		}
	}
	next := make([]int, len(r.secrets)) // where each secret comes next, from i on; -1: nowhere
	for k := range next {
		next[k] = -2 // not looked for yet
	}
	for i := 0; ; {
		at, n := -1, 0
		for k, s := range r.secrets {
			if next[k] == -2 || next[k] >= 0 && next[k] < i {
				next[k] = s.index(b, i)
			}
			// Longest first: at the same place, the first found wins.
			if next[k] >= 0 && (at < 0 || next[k] < at) {
				at, n = next[k], len(s.value)
			}
		}
		switch {
		case at < 0 || at >= limit:
			return limit, i > 0
		case at+n > limit:
			return at, i > 0
		}
		i = at + n
	}
}
