// Package huge allocates large blocks of memory that the kernel may back
// with transparent huge pages. On a virtual machine each page fault is
// dear: a command that reads a prd.json of ten thousand stories touches
// some 8 MB of fresh memory, 2,000 faults of 4 kB each, and a huge page
// maps 2 MB in one. Go's heap does not ask for huge pages (the runtime
// leaves them to the system's setting, and Linux's usual setting,
// madvise, gives them only to memory that asks), so a block that is
// worth it asks for itself.
package huge

import "unsafe"

// Page is the size of a transparent huge page on the machines ralph runs
// on (x86-64, and arm64 with 4 kB pages).
const Page = 2 << 20

// Make returns a slice of n zero Ts. A slice of a huge page or more lies
// in memory from within one T of a huge page boundary, and the whole huge
// pages that hold it are advised MADV_HUGEPAGE where the system has the
// advice: touched for the first time, each is faulted in at once rather
// than 4 kB at a time. Its capacity is all the Ts those pages hold. The
// advice must come before the memory is touched, so Make is for memory
// that is fresh, as the heap of a short command is; memory Go recycles
// may have been touched already, and the advice then changes nothing but
// which pages the kernel may later merge. The memory before and after
// the slice in its allocation is only address space: nothing writes to
// it (a collection that scans it reads zeros the kernel need not keep).
func Make[T any](n int) []T {
	size := int(unsafe.Sizeof(*new(T)))
	if size == 0 || n*size < Page {
		return make([]T, n)
	}
	// span holds the n Ts from anywhere within a T of its start.
	span := (n*size + size - 1 + Page - 1) &^ (Page - 1)
	raw := make([]T, (span+Page)/size+1)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	start := (addr + Page - 1) &^ (Page - 1)
	skip := int((start - addr + uintptr(size) - 1) / uintptr(size))
	first := addr + uintptr(skip*size)
	advise(start, span)
	return raw[skip : skip+n : skip+int((start+uintptr(span)-first)/uintptr(size))]
}
