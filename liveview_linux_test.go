package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// TestCanDraw: the status line is drawn on a terminal, unless its TERM
// says it cannot move the cursor; never on a file.
func TestCanDraw(t *testing.T) {
	tty := openPTY(t)
	t.Setenv("TERM", "xterm")
	if !canDraw(tty) {
		t.Error("canDraw(a terminal) = false with TERM=xterm")
	}
	t.Setenv("TERM", "dumb")
	if canDraw(tty) {
		t.Error("canDraw(a terminal) = true with TERM=dumb")
	}
	t.Setenv("TERM", "xterm")
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if canDraw(f) {
		t.Error("canDraw(a file) = true")
	}
}

// openPTY returns the terminal end of a new pseudo-terminal, or skips the
// test where there is none to open.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	pts, _ := openPTYPair(t)
	return pts
}

// openPTYPair returns both ends of a new pseudo-terminal: the terminal's,
// and the one that stands for the terminal itself (closed, it hangs up).
func openPTYPair(t *testing.T) (pts, ptm *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Skipf("no pseudo-terminal: unlock: %v", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		t.Skipf("no pseudo-terminal: its number: %v", errno)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts, ptm
}

// TestReaderGoneHangup: a write to a terminal that hung up fails with EIO,
// which is a reader gone, not output lost; on a file it is output lost.
func TestReaderGoneHangup(t *testing.T) {
	tty, ptm := openPTYPair(t)
	ptm.Close() // the terminal hangs up
	_, err := tty.Write([]byte("line\n"))
	if err == nil {
		t.Skip("a write to a terminal that hung up did not fail here")
	}
	if !readerGone(err, true) {
		t.Errorf("readerGone(%v, on a terminal) = false", err)
	}
	if readerGone(err, false) {
		t.Errorf("readerGone(%v, on a file) = true", err)
	}
}
