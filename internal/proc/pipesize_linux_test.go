package proc

import (
	"os"
	"syscall"
	"testing"
)

func pipeSizeOf(t *testing.T, f *os.File) int {
	t.Helper()
	size, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETPIPE_SZ, 0)
	if errno != 0 {
		t.Fatalf("F_GETPIPE_SZ: %v", errno)
	}
	return int(size)
}

// TestGrowPipe: a pipe is grown to pipeSize, and one larger already (a
// reader's of ralph's output, say) is not made smaller.
func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	GrowPipe(w)
	if got := pipeSizeOf(t, r); got != pipeSize {
		t.Skipf("the pipe is %d bytes after GrowPipe: this system refuses %d", got, pipeSize)
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), syscall.F_SETPIPE_SZ, 2*pipeSize); errno != 0 {
		t.Skipf("no pipe larger than %d bytes here: %v", pipeSize, errno)
	}
	GrowPipe(w)
	if got := pipeSizeOf(t, r); got != 2*pipeSize {
		t.Errorf("a pipe of %d bytes is %d after GrowPipe", 2*pipeSize, got)
	}
}

// TestFitPipe: what fits in a pipe fits, grown as far as pipeSize when it
// must be; more does not.
func TestFitPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if !fitPipe(w, 100) {
		t.Errorf("100 bytes do not fit in a new pipe of %d", pipeSizeOf(t, r))
	}
	if fitPipe(w, pipeSize+1) {
		t.Errorf("%d bytes fit in a pipe: more than pipeSize", pipeSize+1)
	}
	const large = 300 << 10 // more than Linux's default of 64 KiB
	if !fitPipe(w, large) {
		t.Skipf("the pipe cannot grow to %d bytes here (it is %d)", large, pipeSizeOf(t, r))
	}
	if got := pipeSizeOf(t, r); got < large {
		t.Errorf("%d bytes fit in a pipe of %d", large, got)
	}
}
