package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/internal/proc"
)

// TestOutletReaderReset: ralph's output a socket whose reader went away
// with a reset (it closed with ralph's output unread, or with SO_LINGER
// 0), the write fails with ECONNRESET, not EPIPE. The reader is gone all
// the same: the command ends with exit 0, and the loop stops as on a first
// signal, at once, not only at its next look.
func TestOutletReaderReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	f, err := conn.(*net.TCPConn).File()
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := newOutlet(f)
	o, ok := out.(*outlet)
	if !ok {
		t.Fatalf("newOutlet(a socket) = %T, want an outlet", out)
	}
	peer.(*net.TCPConn).SetLinger(0)
	peer.Close()
	// The reset comes over the loopback: wait for it, bounded.
	for deadline := time.Now().Add(10 * time.Second); !proc.ReaderGone(f); {
		if time.Now().After(deadline) {
			t.Fatal("the peer's reset never came")
		}
		time.Sleep(time.Millisecond)
	}
	_, err = out.Write([]byte("a line nobody reads\n"))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Write into a reset socket = %v, want ECONNRESET", err)
	}
	if !outputGone(err) {
		t.Errorf("Write into a reset socket = %v, want the reader gone", err)
	}
	if code := exitCode(fmt.Errorf("print: %w", err)); code != exitOK {
		t.Errorf("exitCode(a reset reader) = %d, want %d", code, exitOK)
	}
	select {
	case <-o.left:
	default:
		t.Error("a write that found the reader reset did not say it left")
	}
}
