package huge

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// TestMakeAdvises: the memory of a slice of a huge page or more is advised
// MADV_HUGEPAGE, which the kernel shows as the flag "hg" of its mapping.
func TestMakeAdvises(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages:", err)
	}
	for _, n := range []int{Page, 3*Page + 5} {
		s := Make[byte](n)
		flags := vmFlags(t, uintptr(unsafe.Pointer(unsafe.SliceData(s))))
		if !slices.Contains(flags, "hg") {
			t.Errorf("Make(%d): its mapping's flags are %q, want hg among them", n, flags)
		}
	}
}

// vmFlags returns the flags of the mapping that holds addr, from
// /proc/self/smaps.
func vmFlags(t testing.TB, addr uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(flags)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	return nil
}
