// Package proc starts and stops child process groups. Agents hang, crash,
// flood output and leave background children behind; everything ralph runs
// goes through this package so that a child, and everything the child
// started, is gone when ralph is done with it, and reading its output never
// hangs.
//
// Each child runs in its own process group. A deliberate stop sends SIGINT to
// the whole group and SIGKILL after a grace period. Whenever the group leader
// exits, for whatever reason, what is left of its group is killed, so a
// background child holding the output pipe open can neither block ralph nor
// outlive it.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultGrace is the delay between SIGINT and SIGKILL when Config.Grace is 0.
const DefaultGrace = 5 * time.Second

// chunkSize is how much of a pipe is read at a time: output flows through
// fixed-size buffers and is never held whole. Larger reads mean fewer system
// calls for an agent that prints a lot (see GrowPipe).
const chunkSize = 128 << 10

// Config describes a child to start.
type Config struct {
	Argv []string // program and arguments; the program is looked up in $PATH unless it contains a slash
	Dir  string   // working directory; "" is ralph's own
	Env  []string // the complete environment; nil means ralph's own, as with os/exec

	// Stdin is copied to the child's standard input, which is then closed;
	// nil gives the child /dev/null. An *os.File is handed over as it is.
	Stdin io.Reader

	// Stdout and Stderr receive the child's output in chunks of at most 128
	// KiB, each from its own goroutine. nil discards the stream. When both are
	// the same writer, the child gets a single pipe for both, so the order of
	// its writes is kept (as with 2>&1) and the writer is called from a single
	// goroutine. A writer that fails is not called again; the pipe is still
	// drained so the child never blocks on it.
	Stdout io.Writer
	Stderr io.Writer

	// LateStdout and LateStderr, when set, receive in place of Stdout and
	// Stderr what their pipes carry past what had been written to them
	// once the leader was reaped: what a process it left running out of
	// its group (one that called setsid) writes in the grace period
	// after, or its group writes before it is killed. What was written
	// before is still Stdout's or Stderr's, whole, however much of it the
	// pipe still held. Where the system does not say how much a pipe
	// holds (anywhere but Linux), all of it is. A single pipe for both
	// streams has LateStdout.
	LateStdout io.Writer
	LateStderr io.Writer

	Grace time.Duration // SIGINT → SIGKILL delay; 0: DefaultGrace
}

// Process is a started child and its process group.
type Process struct {
	cmd    *exec.Cmd
	stop   context.CancelFunc
	exited chan struct{}
	done   chan struct{}
	code   int
	reason error // why the exit status is unknown, when code is -1
}

// Start starts c.Argv in a new process group. Cancelling ctx stops it as Stop
// does. The returned Process must be waited for (Wait or Done) to release its
// resources.
func Start(ctx context.Context, c Config) (*Process, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("start process: empty command")
	}
	name := c.Argv[0]
	if c.Dir != "" {
		// os.StartProcess only checks Dir when no SysProcAttr is set; without
		// this a missing Dir reads as a missing program.
		fi, err := os.Stat(c.Dir)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("start %s: %s is not a directory", name, c.Dir)
		}
	}
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}

	stopCtx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(stopCtx, name, c.Argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	if c.Dir != "" && c.Env != nil {
		// Programs that trust $PWD over their working directory (opencode
		// does) must not see ralph's own.
		if abs, err := filepath.Abs(c.Dir); err == nil {
			cmd.Env = append(slices.DeleteFunc(slices.Clone(c.Env), func(kv string) bool {
				return strings.HasPrefix(kv, "PWD=")
			}), "PWD="+abs)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
	// A deliberate stop interrupts the whole group; if the leader is still
	// there after the grace period, os/exec kills it (WaitDelay), and the
	// clean-up after the leader's exit kills the rest of the group.
	cmd.Cancel = func() error {
		return signalGroup(cmd.Process.Pid, syscall.SIGINT)
	}
	cmd.WaitDelay = grace

	p := &Process{cmd: cmd, stop: stop, exited: make(chan struct{}), done: make(chan struct{})}
	var (
		parentEnds []*os.File // ours: read ends of stdout/stderr, write end of stdin
		childEnds  []*os.File // closed in ralph once the child has them
		readers    []*os.File
		writers    []io.Writer
		cuts       []*cut // each reader's, when its late output goes elsewhere
	)
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	fail := func(err error) (*Process, error) {
		stop()
		closeAll(parentEnds)
		closeAll(childEnds)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// The pipes are made here, not by os/exec: exec.Cmd.Wait would wait for
	// its copying goroutines, that is for every holder of the pipe, before
	// reporting the leader's exit, and the group must be killed in between.
	outPipe := func(w, late io.Writer) (*os.File, error) {
		r, cw, err := pipe(true)
		if err != nil {
			return nil, err
		}
		parentEnds = append(parentEnds, r)
		childEnds = append(childEnds, cw)
		readers = append(readers, r)
		writers = append(writers, w)
		var ct *cut
		if late != nil && measuresPipes {
			ct = &cut{r: r, late: late, at: -1}
		}
		cuts = append(cuts, ct)
		return cw, nil
	}
	if c.Stdout != nil {
		f, err := outPipe(c.Stdout, c.LateStdout)
		if err != nil {
			return fail(err)
		}
		cmd.Stdout = f
		if sameWriter(c.Stdout, c.Stderr) {
			cmd.Stderr = f
		}
	}
	if c.Stderr != nil && cmd.Stderr == nil {
		f, err := outPipe(c.Stderr, c.LateStderr)
		if err != nil {
			return fail(err)
		}
		cmd.Stderr = f
	}
	var stdinW *os.File
	switch in := c.Stdin.(type) {
	case nil:
		// os/exec opens /dev/null.
	case *os.File:
		cmd.Stdin = in
	default:
		// Input that fits in the pipe is all there before the child
		// starts, and the pipe closed behind it: no goroutine to copy
		// it, nor to wake up for it.
		r, ok, err := prefill(in)
		if err != nil {
			return fail(err)
		}
		if ok {
			childEnds = append(childEnds, r)
			cmd.Stdin = r
			break
		}
		w, r, err := pipe(false)
		if err != nil {
			return fail(err)
		}
		childEnds = append(childEnds, r)
		cmd.Stdin = r
		parentEnds = append(parentEnds, w)
		stdinW = w
	}

	reaped := make(chan struct{})
	if err := spawn(cmd, reaped); err != nil {
		return fail(err)
	}
	running.Store(p, struct{}{})
	noteStarted(p.Pid())
	closeAll(childEnds)

	// The child is done with once its leader has been reaped, each reader
	// is at the end of its pipe and the copy of its input has ended:
	// whichever of them ends last says so, without waiting for the others.
	var (
		pending atomic.Int32
		drained *time.Timer // the readers' grace, once the leader is gone
	)
	pending.Store(int32(len(readers)) + 1)
	if stdinW != nil {
		pending.Add(1)
	}
	end := func() {
		if pending.Add(-1) > 0 {
			return
		}
		if drained != nil {
			drained.Stop()
		}
		close(p.done)
		// The caller has what it waited for: with ralph's one processor
		// (see waiter.go) it runs first, and the pipes are closed after.
		runtime.Gosched()
		for _, r := range readers {
			r.Close()
		}
		stop()
	}
	for i, r := range readers {
		go func() {
			if cuts[i] != nil {
				cuts[i].drain(writers[i])
			} else {
				drain(r, writers[i])
			}
			end()
		}()
	}
	if stdinW != nil {
		go func() {
			// A child that exits without reading gets EPIPE here, or the
			// deadline below; neither is the caller's concern.
			io.Copy(stdinW, c.Stdin)
			stdinW.Close()
			end()
		}()
	}
	go func() {
		awaitExit(cmd.Process.Pid)
		err := cmd.Wait()
		// Reaped: the goroutine that holds the thread the child was
		// started from may let it go. It is told before the caller, who,
		// readied last, runs first.
		close(reaped)
		p.code = exitCode(cmd.ProcessState)
		if cmd.ProcessState == nil {
			p.reason = err
		}
		// What the pipes carry from now on was written after the exit,
		// by what it left running. The cut is made before the group is
		// killed: a stray that waits for the group's end (as the tests'
		// do) writes after it.
		for _, ct := range cuts {
			if ct != nil {
				ct.mark()
			}
		}
		// The leader is gone: nothing in its group may outlive it.
		signalGroup(cmd.Process.Pid, syscall.SIGKILL)
		close(p.exited)
		running.Delete(p)
		if stdinW != nil {
			stdinW.SetWriteDeadline(time.Now())
		}
		if pending.Load() > 1 {
			// Usually the pipes closed as the leader exited, and their
			// readers are about to see it. Someone outside the group (a
			// child that called setsid) may still hold one open: after
			// the grace period, reading stops rather than wait for it.
			drained = time.AfterFunc(grace, func() {
				for i, r := range readers {
					if cuts[i] != nil {
						cuts[i].expire()
					} else {
						r.SetReadDeadline(time.Now())
					}
				}
			})
		}
		end()
	}()
	return p, nil
}

// spawn starts cmd from a thread that outlasts the child, and keeps that
// thread until reaped is closed, once the child has been waited for. The
// kernel sends the death signal (see setDeathSignal) when the thread that
// forked the child ends, not the process, and the runtime ends a thread
// when a goroutine that locked it returns without unlocking, which any
// code may do. A goroutine of the child's own locks the thread it runs on,
// forks there, and holds it: no other goroutine runs on that thread, so
// nothing else can end it. It usually runs on the caller's thread, which
// the caller leaves to it as it waits for the start: the start takes no
// trip to another thread. The exit is waited for from any thread, so that
// the caller is not woken on this one.
func spawn(cmd *exec.Cmd, reaped <-chan struct{}) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-reaped
		}
	}()
	return <-started
}

// killed is closed by the first KillAll.
var (
	killed   = make(chan struct{})
	killOnce sync.Once
)

// UntilKilled returns a context that is done when parent is, or once
// KillAll has run: for a program run otherwise than by Start (git, which
// ralph waits for even when interrupted, so as not to leave a commit half
// made) that a user who asked twice must not wait for either.
func UntilKilled(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-killed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// running holds the processes started and not yet waited for, for KillAll.
var running sync.Map // *Process → struct{}

// started are the children started since KillOrphans last looked, each
// the leader of its process group.
var started struct {
	sync.Mutex
	pids []int
}

func noteStarted(pid int) {
	started.Lock()
	started.pids = append(started.pids, pid)
	started.Unlock()
}

// takeStarted returns the children started since it was last called.
func takeStarted() []int {
	started.Lock()
	defer started.Unlock()
	pids := started.pids
	started.pids = nil
	return pids
}

// isRunning reports whether pid is a child started and not yet waited for.
func isRunning(pid int) bool {
	found := false
	running.Range(func(k, _ any) bool {
		found = k.(*Process).Pid() == pid
		return !found
	})
	return found
}

// KillAll sends SIGKILL to the process group of every child running now,
// without the grace period of Stop: it is for a user who asked twice. Each
// child's Wait then returns as usual, so callers record what they ran.
// What runs under UntilKilled is stopped too.
func KillAll() {
	killOnce.Do(func() { close(killed) })
	running.Range(func(k, _ any) bool {
		signalGroup(k.(*Process).Pid(), syscall.SIGKILL)
		return true
	})
}

// Killed reports whether KillAll has run: the user asked twice.
func Killed() bool {
	select {
	case <-killed:
		return true
	default:
		return false
	}
}

// Pid returns the process id of the group leader, which is also the process
// group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop stops the process group deliberately: SIGINT to the group now, SIGKILL
// after the grace period if the leader is still there. It returns at once and
// may be called any number of times, also after the process has exited.
func (p *Process) Stop() { p.stop() }

// Exited returns a channel that is closed when the process has exited and
// its group is killed, before the rest of the output is delivered: a child
// that left the group (setsid) may hold the pipe open for the grace period
// after.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Done returns a channel that is closed when the process and its group are
// gone and all their output has been delivered.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits until the process and its group are gone and all output has been
// delivered, and returns the leader's exit status: its exit code, 128+n when
// it was killed by signal n, or -1 when the status could not be read.
func (p *Process) Wait() int {
	<-p.done
	return p.code
}

// Err returns why Wait reported -1, and nil otherwise. It may only be called
// after Wait or Done.
func (p *Process) Err() error { return p.reason }

// exitCode maps a wait status to the shell's convention.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
	return ps.ExitCode()
}

// signalGroup sends sig to every process in the group led by pgid. An empty
// group is not an error: there is nothing left to stop.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// drain copies r to w in fixed-size chunks until EOF or a read error. A
// failing w is dropped, but r is still read to the end so that the writer
// on the other side never blocks.
func drain(r *os.File, w io.Writer) {
	bp := chunks.Get().(*[]byte)
	defer chunks.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 && w != nil {
			if _, werr := w.Write(buf[:n]); werr != nil {
				w = nil
			}
		}
		if err != nil {
			return
		}
	}
}

// A cut splits what a pipe carries at the leader's exit: what was written
// before it goes to the pipe's writer, what comes after to late.
type cut struct {
	r    *os.File
	late io.Writer

	// mu makes each read of the pipe and its count one step, which mark
	// never falls within: a read whose bytes have left the pipe and are
	// not counted yet would put the cut before them.
	mu      sync.Mutex
	read    int64 // bytes read from the pipe so far
	at      int64 // where the leader's exit falls in the stream; -1: not yet, or not known
	expired bool  // the grace period is over: reading ends at the cut
}

// mark puts the cut at what has been read of the pipe and what it still
// holds.
func (c *cut) mark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := pending(c.r); ok {
		c.at = c.read + int64(n)
	}
}

// expire ends the reading of the pipe once the grace period after the
// leader's exit is over: at once when what the leader wrote has been read
// (or where it ends is not known), else as soon as it has. A slow reader
// of ralph's output (a paused pager) must not cost the leader the end of
// what it wrote, its reply: that is at most what the pipe held at its
// exit.
func (c *cut) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at < 0 || c.read >= c.at {
		c.r.SetReadDeadline(time.Now())
		return
	}
	c.expired = true
}

// drain reads the pipe as the function drain does, giving what comes
// before the cut to w and what comes after it to c.late; either is dropped
// once it fails. Each read and its count are one step under c.mu.
func (c *cut) drain(w io.Writer) {
	rc, err := c.r.SyscallConn()
	if err != nil {
		drain(c.r, w)
		return
	}
	bp := chunks.Get().(*[]byte)
	defer chunks.Put(bp)
	buf := *bp
	late := c.late
	var off int64 // where buf starts in the stream
	for {
		var n int
		var at int64
		var rerr error
		var stop bool // the grace period is over, and the cut is read
		err := rc.Read(func(fd uintptr) bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			for {
				n, rerr = syscall.Read(int(fd), buf)
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr == syscall.EAGAIN {
				return false // wait until there is something to read
			}
			if n > 0 {
				c.read += int64(n)
			}
			at = c.at
			stop = c.expired && c.read >= c.at
			return true
		})
		if err != nil || rerr != nil || n <= 0 {
			return
		}
		mine := n
		if at >= 0 && off+int64(n) > at {
			mine = int(max(0, at-off))
		}
		off += int64(n)
		if mine > 0 && w != nil {
			if _, werr := w.Write(buf[:mine]); werr != nil {
				w = nil
			}
		}
		if mine < n && late != nil {
			if _, werr := late.Write(buf[mine:n]); werr != nil {
				late = nil
			}
		}
		if stop {
			return
		}
	}
}

// chunks are the buffers drain reads into, kept from one child to the next:
// a loop starts a child or two a second, each with two pipes.
var chunks = sync.Pool{New: func() any {
	b := make([]byte, chunkSize)
	return &b
}}

// sameWriter reports whether a and b are the same writer, without panicking
// on writers whose dynamic type cannot be compared.
func sameWriter(a, b io.Writer) bool {
	if a == nil || b == nil {
		return false
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}
