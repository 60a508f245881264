// Package lines cuts a stream of output into lines as it comes, holding at
// most a bounded part of one line: an agent or a check may print a line of
// any length.
package lines

import "bytes"

// Splitter cuts what is written to it into lines and hands each to Line,
// without ever holding more than Max bytes of one line: a longer line is
// passed over, and only its length is given to Long (when not nil).
type Splitter struct {
	Max  int
	Line func([]byte)  // a complete line, without its newline; only valid during the call
	Long func(n int64) // a line of n bytes was too long to keep

	buf  []byte // the current line so far
	skip int64  // > 0: the current line is being passed over; its length so far
}

// Write cuts p into lines; it never fails.
func (s *Splitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.add(p)
			break
		}
		s.add(p[:i])
		s.end()
		p = p[i+1:]
	}
	return n, nil
}

func (s *Splitter) add(p []byte) {
	switch {
	case s.skip > 0:
		s.skip += int64(len(p))
	case len(s.buf)+len(p) > s.Max:
		s.skip = int64(len(s.buf) + len(p))
		s.buf = s.buf[:0]
	default:
		s.buf = append(s.buf, p...)
	}
}

func (s *Splitter) end() {
	if s.skip > 0 {
		if s.Long != nil {
			s.Long(s.skip)
		}
		s.skip = 0
		return
	}
	s.Line(s.buf)
	s.buf = s.buf[:0]
}

// Flush ends a last line that had no newline.
func (s *Splitter) Flush() {
	if len(s.buf) > 0 || s.skip > 0 {
		s.end()
	}
}

// Held is the room held for the line being cut: at most about Max, however
// long the lines written.
func (s *Splitter) Held() int { return cap(s.buf) }
