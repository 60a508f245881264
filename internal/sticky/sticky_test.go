package sticky

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"
)

// failingWriter fails every write, as a file on a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestWriter keeps the first write error, so that a copy that could not be
// written is told from one that failed otherwise.
func TestWriter(t *testing.T) {
	w := &Writer{W: failingWriter{}}
	if _, err := io.WriteString(w, "data"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write = %v, want ENOSPC", err)
	}
	io.WriteString(w, "more")
	if !errors.Is(w.Err(), syscall.ENOSPC) {
		t.Errorf("Err = %v, want ENOSPC", w.Err())
	}
	var ok bytes.Buffer
	w = &Writer{W: &ok}
	if _, err := io.WriteString(w, "data"); err != nil || w.Err() != nil || ok.String() != "data" {
		t.Errorf("a write that works: %v, %v, %q", err, w.Err(), ok.String())
	}
}
