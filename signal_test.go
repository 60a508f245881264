package main

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSignalContextOtherPipe: a write into a pipe that is not ralph's
// output, whose reader is gone (an agent that exits without reading its
// prompt on stdin), fails with EPIPE and raises SIGPIPE, and does not stop
// ralph; a write into ralph's own output whose reader is gone does.
func TestSignalContextOtherPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	out := newOutlet(w)
	ctx, stop := signalContext(context.Background(), func() {}, out)
	defer stop()

	ar, aw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	ar.Close()
	if _, err := aw.Write([]byte("a prompt nobody reads\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write into the agent's stdin without a reader: %v, want EPIPE", err)
	}
	select {
	case <-ctx.Done():
		t.Fatal("stopped by a write into a pipe that is not ralph's output")
	case <-time.After(300 * time.Millisecond):
	}

	r.Close()
	if _, err := out.Write([]byte("a line nobody reads\n")); !outputGone(err) {
		t.Fatalf("write into ralph's output without a reader: %v, want the reader gone", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not stopped by a write into ralph's output without a reader")
	}
}
