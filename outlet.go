package main

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/ralph-harness/ralph/internal/proc"
)

// readerPoll is how often ralph looks whether the reader of its output is
// gone while it writes nothing (see readerLeft).
const readerPoll = 250 * time.Millisecond

// outletGrace is how long a write may block once ralph is stopping before
// the output is given up.
const outletGrace = 2 * time.Second

// outlet is one of ralph's output streams when its reader can stop
// reading: a pipe, a FIFO, a socket or a terminal (a script that no longer
// reads, a paused pager, Ctrl-S). Until ralph is asked to stop, a write
// waits for the reader as any write does. Once it is (see stop), a write
// that is still blocked after outletGrace is given up, and so is every
// later one: ralph then records the interrupted iteration and exits,
// instead of waiting forever in a write while the signal goes unheeded.
//
// A write that fails because the reader is gone returns a
// *readerGoneError, which tells the reader's going from lost output.
//
// The write itself runs in a goroutine of the outlet's own, which may stay
// blocked in it until the process ends; the caller's bytes are copied
// first, so that it may reuse them once Write has returned.
type outlet struct {
	f   *os.File
	tty bool // f is a terminal: its hangup is its reader going too

	mu      sync.Mutex // one write at a time, in order
	buf     []byte     // the bytes handed to the goroutine
	stalled bool       // a write was given up: drop the rest

	todo     chan []byte
	done     chan error
	stopping chan struct{}
	stopOnce sync.Once
	left     chan struct{} // closed once a write finds the reader gone
	leftOnce sync.Once
}

// newOutlet returns w as an outlet when it is a file whose reader can
// stall, and w itself otherwise: a regular file or /dev/null never blocks
// for long.
func newOutlet(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return w
	}
	info, err := f.Stat()
	if err != nil {
		return w
	}
	tty := isTerminal(f)
	if info.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 && !tty {
		return w
	}
	if info.Mode()&os.ModeNamedPipe != 0 {
		// ralph waits less often for the reader of its output (a pager,
		// tee, a script), which reads more at a time.
		proc.GrowPipe(f)
	}
	o := &outlet{f: f, tty: tty, todo: make(chan []byte), done: make(chan error), stopping: make(chan struct{}), left: make(chan struct{})}
	go func() {
		for p := range o.todo {
			_, err := f.Write(p)
			o.done <- err
		}
	}()
	return o
}

func (o *outlet) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stalled {
		return len(p), nil
	}
	// The goroutine is waiting: the last write has returned.
	o.buf = append(o.buf[:0], p...)
	o.todo <- o.buf
	select {
	case err := <-o.done:
		return o.result(p, err)
	case <-o.stopping:
	}
	t := time.NewTimer(outletGrace)
	defer t.Stop()
	select {
	case err := <-o.done:
		return o.result(p, err)
	case <-t.C:
		// Nobody reads: the goroutine keeps the bytes it is stuck on.
		o.stalled, o.buf = true, nil
		return len(p), nil
	}
}

func (o *outlet) result(p []byte, err error) (int, error) {
	if err != nil {
		if peerGone(err) {
			o.leave()
		}
		if readerGone(err, o.tty) {
			return 0, &readerGoneError{err: err}
		}
		return 0, err
	}
	return len(p), nil
}

// readerGone reports whether err, a write to an output, says that its
// reader is gone rather than that output was lost: a pipe or a socket
// whose reader closed it (see peerGone), or a terminal that hung up (on a
// ralph that outlives it: disowned, or started ignoring SIGHUP). The
// output was for them.
func readerGone(err error, tty bool) bool {
	return peerGone(err) || tty && errors.Is(err, syscall.EIO)
}

// peerGone reports whether err, a write to a pipe or a socket, says that
// its reader closed it: EPIPE, or ECONNRESET from a socket whose reader
// reset it (it closed with ralph's output unread, or with SO_LINGER 0),
// which a write meets once, before EPIPE.
func peerGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// readerGoneError is a write to an outlet that failed because its reader is
// gone (`ralph status | head -1`, once head has its line). A command that
// fails with it alone ends quietly with exit 0 (see exitCode): the reader
// has what it wanted, and no one reads what ralph would say about it.
type readerGoneError struct{ err error }

func (e *readerGoneError) Error() string { return e.err.Error() }
func (e *readerGoneError) Unwrap() error { return e.err }

// outputGone reports whether err is, or wraps, a write that failed because
// its reader is gone.
func outputGone(err error) bool {
	var gone *readerGoneError
	return errors.As(err, &gone)
}

// stop says that ralph is stopping: from now on, a write blocked for
// outletGrace is given up.
func (o *outlet) stop() { o.stopOnce.Do(func() { close(o.stopping) }) }

// stopOutput stops w when it is an outlet.
func stopOutput(w io.Writer) {
	if o, ok := w.(*outlet); ok {
		o.stop()
	}
}

// readerLeft returns a channel that is closed once the reader of w, an
// outlet into a pipe or a socket, is gone, and nil, which is never ready,
// for any other w. A write that fails with EPIPE or ECONNRESET (see
// peerGone) says so; where the system tells without a write, so does a
// look every readerPoll, until done is closed: ralph may write nothing for
// hours while it watches for changes, waits out a rate limit or runs a
// silent agent, and a script that had what it wanted from it (`ralph loop
// --watch --json | grep -m1 waiting`) would wait as long for it to end. A
// terminal that hung up is no reader gone here: its SIGHUP says so, unless
// ralph was started ignoring it, to outlive the terminal.
func readerLeft(w io.Writer, done <-chan struct{}) <-chan struct{} {
	o, ok := w.(*outlet)
	if !ok || o.tty {
		return nil
	}
	if proc.SeesReaderGone {
		go func() {
			tick := time.NewTicker(readerPoll)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					if proc.ReaderGone(o.f) {
						o.leave()
						return
					}
				case <-o.left:
					return
				case <-done:
					return
				}
			}
		}()
	}
	return o.left
}

// leave says that the reader of o is gone.
func (o *outlet) leave() { o.leftOnce.Do(func() { close(o.left) }) }

// fileOf returns the file under an outlet, and any other writer as it is.
func fileOf(w io.Writer) io.Writer {
	if o, ok := w.(*outlet); ok {
		return o.f
	}
	return w
}
