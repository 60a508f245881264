package proc

import (
	"os"
	"syscall"
)

// pipeSize is how large an output pipe is made (Linux's default is 64 KiB):
// a child that prints fast blocks, and ralph wakes up to read, far less
// often, which lets a gigabyte of output through in about half the time.
const pipeSize = 1 << 20

// GrowPipe asks the kernel for a pipeSize buffer for the pipe that r is an
// end of, unless it has one as large already (a pipe of someone else's may
// have been made larger). A refusal (a lower /proc/sys/fs/pipe-max-size) is
// no error: the pipe works as it is, only slower. It uses SyscallConn
// rather than Fd, which would make r blocking and its deadlines void.
func GrowPipe(r *os.File) {
	if c, err := r.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) { growPipe(int(fd), pipeSize) })
	}
}

// growPipe makes the pipe that fd is an end of at least n bytes large,
// unless it is already, and returns its size.
func growPipe(fd, n int) (int, error) {
	size, err := fcntl(fd, syscall.F_GETPIPE_SZ, 0)
	if err == nil && size < n {
		size, err = fcntl(fd, syscall.F_SETPIPE_SZ, n)
	}
	return size, err
}
