package huge

import (
	"testing"
	"unsafe"
)

// story is a type the size of a prd story, which does not divide a page.
type story struct {
	id   string
	rest [35]uintptr
}

func TestMakeBytes(t *testing.T) {
	for _, n := range []int{0, 1, 4096, Page - 1, Page, Page + 1, 5<<20 + 3} {
		checkMake[byte](t, n)
	}
}

func TestMakeStructs(t *testing.T) {
	per := Page / int(unsafe.Sizeof(story{}))
	for _, n := range []int{0, 1, per - 1, per, per + 1, 3 * per} {
		checkMake[story](t, n)
	}
}

// checkMake checks Make[T](n): n zero Ts, and from a huge page on, the
// layout that lets the advice cover them all: the first within one T of
// a huge page boundary, and the capacity all that fits in whole huge
// pages from there.
func checkMake[T comparable](t testing.TB, n int) {
	t.Helper()
	s := Make[T](n)
	size := uintptr(unsafe.Sizeof(*new(T)))
	if len(s) != n || cap(s) < n {
		t.Errorf("Make(%d) of %d-byte values: len %d, cap %d", n, size, len(s), cap(s))
		return
	}
	var zero T
	for i := range s {
		if s[i] != zero {
			t.Fatalf("Make(%d): element %d is not zero", n, i)
		}
	}
	if uintptr(n)*size < Page {
		return
	}
	first := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	start := first &^ (Page - 1)
	if first-start >= size {
		t.Errorf("Make(%d) of %d-byte values starts %d bytes past a huge page boundary", n, size, first-start)
	}
	end := first + uintptr(cap(s))*size
	if pages := (end - start + Page - 1) / Page; end+size <= start+pages*Page {
		t.Errorf("Make(%d) of %d-byte values: cap %d leaves room for more in its %d huge pages", n, size, cap(s), pages)
	}
	if need := (uintptr(n)*size + size - 1 + Page - 1) / Page; end > start+need*Page {
		t.Errorf("Make(%d) of %d-byte values: cap %d reaches past the %d huge pages it needs", n, size, cap(s), need)
	}
	s = s[:cap(s)]
	s[0], s[len(s)-1] = zero, zero // the room is there to write to
}
