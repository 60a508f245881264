package huge

import "syscall"

// madvHugePage is MADV_HUGEPAGE, which package syscall lacks.
const madvHugePage = 14

// advise asks for huge pages for the n bytes of memory at addr, which
// start on a huge page boundary. Where the kernel has no such advice or
// refuses it, nothing changes but the size of the faults.
func advise(addr uintptr, n int) {
	syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(n), madvHugePage)
}
