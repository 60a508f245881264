package readbuf

import (
	"testing"
	"unsafe"

	"github.com/ralph-harness/ralph/internal/huge"
)

// TestFresh: a fresh buffer has the room asked for, and from a huge page
// on, its room starts on a huge page boundary, where the advice can apply
// to all of it.
func TestFresh(t *testing.T) {
	for _, n := range []int{0, 1, 4096, huge.Page - 1, huge.Page, huge.Page + 1, 5<<20 + 3} {
		b := fresh(n)
		if len(b) != 0 || cap(b) < n {
			t.Errorf("fresh(%d): len %d, cap %d", n, len(b), cap(b))
			continue
		}
		if n < huge.Page {
			continue
		}
		if addr := uintptr(unsafe.Pointer(unsafe.SliceData(b))); addr%huge.Page != 0 {
			t.Errorf("fresh(%d) starts at %#x, not on a huge page", n, addr)
		}
		if cap(b)%huge.Page != 0 || cap(b) >= n+huge.Page {
			t.Errorf("fresh(%d): cap %d, want the huge pages that hold %d bytes", n, cap(b), n)
		}
		b = b[:cap(b)]
		b[0], b[len(b)-1] = 1, 2 // the room is there to write to
	}
}
