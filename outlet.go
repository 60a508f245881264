package main

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/ralph-harness/ralph/internal/proc"
)

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
// The write itself runs in a goroutine of the outlet's own, which may stay
// blocked in it until the process ends; the caller's bytes are copied
// first, so that it may reuse them once Write has returned.
type outlet struct {
	f *os.File

	mu      sync.Mutex // one write at a time, in order
	buf     []byte     // the bytes handed to the goroutine
	stalled bool       // a write was given up: drop the rest

	todo     chan []byte
	done     chan error
	stopping chan struct{}
	stopOnce sync.Once
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
	if info.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 && !isTerminal(f) {
		return w
	}
	if info.Mode()&os.ModeNamedPipe != 0 {
		// ralph waits less often for the reader of its output (a pager,
		// tee, a script), which reads more at a time.
		proc.GrowPipe(f)
	}
	o := &outlet{f: f, todo: make(chan []byte), done: make(chan error), stopping: make(chan struct{})}
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
		return 0, err
	}
	return len(p), nil
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

// fileOf returns the file under an outlet, and any other writer as it is.
func fileOf(w io.Writer) io.Writer {
	if o, ok := w.(*outlet); ok {
		return o.f
	}
	return w
}
