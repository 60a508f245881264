package proc

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestReaderGone: the write end of a pipe, and a socket, have their reader
// until it closes its end, however full the pipe is.
func TestReaderGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if ReaderGone(w) {
		t.Error("a pipe with its reader: gone")
	}
	w.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)) // fill it
	for err == nil {
		_, err = w.Write(make([]byte, 64<<10))
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("fill the pipe: %v", err)
	}
	if ReaderGone(w) {
		t.Error("a full pipe with its reader: gone")
	}
	r.Close()
	if !ReaderGone(w) {
		t.Error("a pipe whose reader closed it: not gone")
	}

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	defer ours.Close()
	if ReaderGone(ours) {
		t.Error("a socket with its peer: gone")
	}
	theirs.Close()
	if !ReaderGone(ours) {
		t.Error("a socket whose peer closed it: not gone")
	}
}
