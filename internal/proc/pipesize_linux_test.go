package proc

import (
	"io"
	"os"
	"strconv"
	"strings"
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

// TestPrefill: input that fits in a pipe, grown as far as pipeSize when it
// must be, is written into it whole and the pipe's end closed, so that the
// child's end reads it, then the end of its input; more, or input whose
// length is not known, is not.
func TestPrefill(t *testing.T) {
	const large = 300 << 10 // more than Linux's default of 64 KiB
	for _, n := range []int{0, 100, large} {
		in := strings.Repeat("x", n)
		r, ok, err := prefill(strings.NewReader(in))
		if err != nil || !ok {
			if n == large && err == nil {
				t.Skipf("the pipe cannot grow to %d bytes here", large)
			}
			t.Fatalf("%d bytes: prefill = %v, %v", n, ok, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != in {
			t.Errorf("%d bytes in, %d read back (%v)", n, len(got), err)
		}
	}
	for _, in := range []io.Reader{strings.NewReader(strings.Repeat("x", pipeSize+1)), io.LimitReader(strings.NewReader("x"), 1)} {
		if r, ok, err := prefill(in); ok || err != nil || r != nil {
			t.Errorf("prefill of %T = %v, %v, %v; want nothing made", in, r, ok, err)
		}
	}
}

// TestOutputPipe: the pipe ralph reads a child's output from is grown to
// pipeSize, and only ralph's end is non-blocking.
func TestOutputPipe(t *testing.T) {
	ours, theirs, err := pipe(true)
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	defer theirs.Close()
	max, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(max))); n >= pipeSize {
		if got := pipeSizeOf(t, theirs); got != pipeSize {
			t.Errorf("the output pipe is %d bytes, want %d", got, pipeSize)
		}
	}
	for _, c := range []struct {
		f    *os.File
		want bool
	}{{ours, true}, {theirs, false}} {
		flags, err := fcntl(int(c.f.Fd()), syscall.F_GETFL, 0)
		if err != nil {
			t.Fatal(err)
		}
		if nb := flags&syscall.O_NONBLOCK != 0; nb != c.want {
			t.Errorf("%s: non-blocking %v, want %v", c.f.Name(), nb, c.want)
		}
	}
}
