package readbuf

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the machines ralph
// runs on (x86-64 and arm64 with 4 kB pages).
const hugePage = 2 << 20

// fresh returns an empty buffer with room for at least n bytes. From
// hugePage bytes on, its room starts on a huge page boundary and the
// kernel is asked to back it with huge pages where it can (madvise,
// MADV_HUGEPAGE): a read into fresh memory then takes a fault for every
// two megabytes rather than for every four kilobytes, and on a virtual
// machine each of those faults is dear. The advice changes nothing where
// transparent huge pages are off. The room past n is only address space
// until something is written to it.
func fresh(n int) []byte {
	if n < hugePage {
		return make([]byte, 0, n)
	}
	size := (n + hugePage - 1) &^ (hugePage - 1)
	raw := make([]byte, 0, size+hugePage)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	skip := int((addr+hugePage-1)&^(hugePage-1) - addr)
	buf := raw[skip : skip : skip+size]
	syscall.Syscall(syscall.SYS_MADVISE, addr+uintptr(skip), uintptr(size), madvHugePage)
	return buf
}

// madvHugePage is MADV_HUGEPAGE, which package syscall lacks.
const madvHugePage = 14
