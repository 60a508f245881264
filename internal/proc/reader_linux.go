package proc

import (
	"os"
	"syscall"
	"unsafe"
)

// SeesReaderGone says that ReaderGone tells a reader gone without a write.
const SeesReaderGone = true

// ReaderGone reports whether w is the write end of a pipe whose read end
// is closed, or a socket whose peer is gone: a write to it would fail with
// EPIPE. It asks poll(2) for no event at all, which still reports those
// two, and does not wait. A terminal that hung up counts as gone too.
func ReaderGone(w *os.File) bool {
	c, err := w.SyscallConn()
	if err != nil {
		return false
	}
	const (
		pollErr = 0x8
		pollHup = 0x10
	)
	gone := false
	c.Control(func(fd uintptr) {
		p := struct {
			fd              int32
			events, revents int16
		}{fd: int32(fd)}
		var zero syscall.Timespec
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		gone = errno == 0 && n == 1 && p.revents&(pollErr|pollHup) != 0
	})
	return gone
}
