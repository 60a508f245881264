package proc

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pipe makes a pipe for a child's standard stream: the child's end
// blocking, as programs expect of their standard streams, and ralph's end
// non-blocking, for Go's poller. (os.Pipe makes both ends non-blocking and
// os/exec makes the child's blocking again: a dozen system calls more for
// every child.) parentReads says which end is ralph's; an output pipe,
// which ralph reads, is made pipeSize large (see GrowPipe). Both ends are
// closed on exec; the child gets its end as a standard stream.
func pipe(parentReads bool) (parent, child *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	ours, theirs := p[1], p[0]
	if parentReads {
		ours, theirs = p[0], p[1]
		// A new pipe has the default size, or less: it is grown without
		// asking its size first.
		fcntl(ours, syscall.F_SETPIPE_SZ, pipeSize)
	}
	// A new end's status flags are its access mode alone, which F_SETFL
	// keeps: it is made non-blocking without reading them first.
	if _, err := fcntl(ours, syscall.F_SETFL, syscall.O_NONBLOCK); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(ours), "|ralph"), os.NewFile(uintptr(theirs), "|child"), nil
}

// prefill makes the pipe for a child's standard input and writes in to it
// whole, then closes ralph's end, when in says its length (a
// strings.Reader does) and that fits in the pipe: the child reads all of
// it, then the end of its input, and ralph has nothing to copy, nor to
// wake up for. ralph's end never becomes a file of Go's poller. ok is
// false, and nothing is made, when in does not fit.
func prefill(in io.Reader) (child *os.File, ok bool, err error) {
	sized, known := in.(interface{ Len() int })
	if !known || sized.Len() > pipeSize {
		return nil, false, nil
	}
	n := sized.Len()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, false, os.NewSyscallError("pipe2", err)
	}
	r, w := p[0], p[1]
	if size, err := growPipe(w, n); err != nil || size < n {
		// Smaller than asked (a lower /proc/sys/fs/pipe-max-size, or a
		// user past pipe-user-pages-soft): copied as the child reads.
		syscall.Close(r)
		syscall.Close(w)
		return nil, false, nil
	}
	// Writes to a blocking pipe with room for them are not cut short.
	_, err = io.Copy(rawWriter(w), in)
	if cerr := syscall.Close(w); err == nil && cerr != nil {
		err = os.NewSyscallError("close", cerr)
	}
	if err != nil {
		syscall.Close(r)
		return nil, false, err
	}
	return os.NewFile(uintptr(r), "|child"), true, nil
}

// rawWriter writes to a blocking file descriptor that is no file of Go's.
type rawWriter int

func (w rawWriter) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Write(int(w), b[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, os.NewSyscallError("write", err)
		}
		n += m
	}
	return n, nil
}

// fcntl runs fcntl(fd, cmd, arg) and returns its result.
func fcntl(fd, cmd, arg int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if errno != 0 {
		return int(r), errno
	}
	return int(r), nil
}

// measuresPipes says that pending can tell how much a pipe holds.
const measuresPipes = true

// pending returns how many bytes the pipe that f is an end of holds,
// unread; ok is false when the system does not say.
func pending(f *os.File) (n int, ok bool) {
	c, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ierr error
	if err := c.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return n, true
}
