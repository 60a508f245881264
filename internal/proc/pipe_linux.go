package proc

import (
	"os"
	"syscall"
)

// pipe makes a pipe for a child's standard stream: the child's end
// blocking, as programs expect of their standard streams, and ralph's end
// non-blocking, for Go's poller. (os.Pipe makes both ends non-blocking and
// os/exec makes the child's blocking again: a dozen system calls more for
// every child.) parentReads says which end is ralph's. Both ends are
// closed on exec; the child gets its end as a standard stream.
func pipe(parentReads bool) (parent, child *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	ours, theirs := p[1], p[0]
	if parentReads {
		ours, theirs = p[0], p[1]
	}
	if err := syscall.SetNonblock(ours, true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(ours), "|ralph"), os.NewFile(uintptr(theirs), "|child"), nil
}
