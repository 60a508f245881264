// Package sticky keeps the first error of the writes to a writer.
package sticky

import (
	"io"
	"sync"
)

// Writer keeps the first error of the writes through it, and writes no
// more after it: a command printing line after line can say once, at its
// end, that its output was lost (a full disk, a closed pipe), and a copy
// that could not be written is told from one that failed otherwise. It
// may be written from several goroutines.
type Writer struct {
	W   io.Writer
	mu  sync.Mutex
	err error
}

func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.W.Write(p)
	s.err = err
	return n, err
}

// Err returns the first error of the writes through s.
func (s *Writer) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
