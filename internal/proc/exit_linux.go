package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns once the process pid, a child not yet waited for, has
// exited, and leaves it to be reaped by its Wait. It waits through Go's
// poller, on a pidfd, where os/exec's Wait would block a thread in a
// system call for the whole of the child's run: with ralph's one
// processor (see waiter.go), the runtime's monitor then takes the
// processor back from that thread, and the child's exit wakes that
// thread as well as the poller's for its pipes. Where the kernel has no
// pidfds (before Linux 5.4), it returns at once and Wait waits alone.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	c, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A pidfd reads as ready once its process has exited. WNOWAIT looks
	// without reaping; an error (a kernel without P_PIDFD) ends the wait
	// here too.
	c.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0
	})
}
