package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOutletKeepsOutput: through an outlet, a reader that reads gets every
// byte in order, also once ralph is stopping: only a write that stays
// blocked is given up.
func TestOutletKeepsOutput(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := newOutlet(w)
	if _, ok := out.(*outlet); !ok {
		t.Fatalf("newOutlet(a pipe) = %T, want an outlet", out)
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	var want bytes.Buffer
	write := func(p []byte) {
		want.Write(p)
		if n, err := out.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	for i := range 2000 {
		if i == 1000 {
			stopOutput(out)
		}
		write(fmt.Appendf(nil, "line %d of the output\n", i))
	}
	// More than the pipe holds: writes wait for the reader, briefly.
	for i := range 64 {
		write(bytes.Repeat([]byte{'a' + byte(i%26)}, 64<<10))
	}
	w.Close()
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Errorf("the reader got %d bytes, want %d in order", len(b), want.Len())
	}
}

// TestOutletOnlyWhereNeeded: a regular file, /dev/null or a writer that is
// no file never stall; they are written to as they are.
func TestOutletOnlyWhereNeeded(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	var buf bytes.Buffer
	for _, w := range []io.Writer{file, devNull, &buf} {
		if got := newOutlet(w); got != w {
			t.Errorf("newOutlet(%T) = %T, want the writer itself", w, got)
		}
		if fileOf(w) != w {
			t.Errorf("fileOf(%T) is not the writer itself", w)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if fileOf(newOutlet(w)) != w {
		t.Errorf("fileOf(an outlet) is not its file")
	}
}

// TestOutletReaderGone: a write into a pipe whose reader is gone fails with
// an error that says so, which ends a command with exit 0; output lost for
// another reason is still an error.
func TestOutletReaderGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Close()
	_, err = newOutlet(w).Write([]byte("a line nobody reads\n"))
	if !outputGone(err) || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write into a pipe without a reader = %v, want the reader gone (EPIPE)", err)
	}
	if code := exitCode(fmt.Errorf("print: %w", err)); code != exitOK {
		t.Errorf("exitCode(the reader gone) = %d, want %d", code, exitOK)
	}
	lost := &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}
	if outputGone(lost) {
		t.Errorf("outputGone(%v) = true", lost)
	}
	if code := exitCode(lost); code != exitRuntime {
		t.Errorf("exitCode(%v) = %d, want %d", lost, code, exitRuntime)
	}
}
