package progress_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-harness/ralph/bench/fixture"
	"github.com/ralph-harness/ralph/progress"
)

// The ledgers are written once per test binary: a million entries take a
// few seconds to write and half a gigabyte of disk.
var ledgers fixture.Cache

func TestMain(m *testing.M) {
	code := m.Run()
	ledgers.Remove()
	os.Exit(code)
}

// The ledger sizes the benchmarks run at: a day's run and a very long one.
var entries = []int{1_000, 1_000_000}

// ledger returns the path of a progress.txt of n entries over 5,000
// stories.
func ledger(b *testing.B, n int) string {
	b.Helper()
	dir, err := ledgers.Dir(10_000, 5_000, n)
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, "progress.txt")
}

// BenchmarkResume is what resuming costs: the last entry, for the totals, and
// the last three, for the prompt.
func BenchmarkResume(b *testing.B) {
	for _, n := range entries {
		for _, last := range []int{1, 3} {
			b.Run(fmt.Sprintf("entries=%d,last=%d", n, last), func(b *testing.B) {
				path := ledger(b, n)
				for b.Loop() {
					es, err := progress.Tail(path, last)
					if err != nil || len(es) != last {
						b.Fatalf("Tail = %d entries, %v", len(es), err)
					}
				}
			})
		}
	}
}

// maxScan is how far back the loop and `ralph status` read the ledger at
// most (loop's maxHistoryScan).
const maxScan = 4 << 20

// BenchmarkTailFunc reads and parses every entry in the last 4 MiB, as a
// search for a story that is not in them does.
func BenchmarkTailFunc(b *testing.B) {
	for _, n := range entries {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			path := ledger(b, n)
			for b.Loop() {
				seen := 0
				err := progress.TailFunc(path, maxScan, func(e progress.Entry) bool {
					seen++
					return e.StoryID != "none"
				})
				if err != nil || seen == 0 {
					b.Fatalf("TailFunc saw %d entries, %v", seen, err)
				}
			}
		})
	}
}

// BenchmarkTailHeads is BenchmarkTailFunc reading only the start markers,
// as the loop's search for a story's previous attempt and `ralph status` do.
func BenchmarkTailHeads(b *testing.B) {
	for _, n := range entries {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			path := ledger(b, n)
			for b.Loop() {
				seen := 0
				err := progress.TailHeads(path, maxScan, func(h progress.Head) bool {
					seen++
					return h.StoryID != "none"
				})
				if err != nil || seen == 0 {
					b.Fatalf("TailHeads saw %d entries, %v", seen, err)
				}
			}
		})
	}
}

// BenchmarkAppend appends an entry, synced to disk, to a ledger of a
// million entries; the appended bytes are cut off again afterwards.
func BenchmarkAppend(b *testing.B) {
	path := ledger(b, 1_000_000)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := os.Truncate(path, st.Size()); err != nil {
			b.Error(err)
		}
	})
	// The ledger was just written: its pages go to disk first, so that
	// the first append's sync does not pay for them.
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err != nil {
		b.Fatal(err)
	} else if err := f.Sync(); err != nil {
		b.Fatal(err)
	} else {
		f.Close()
	}
	l, err := progress.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	i := 1_000_000
	for b.Loop() {
		i++
		if err := l.Append(fixture.Entry(i, 5_000)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFormat renders one entry.
func BenchmarkFormat(b *testing.B) {
	e := fixture.Entry(7, 5_000)
	for b.Loop() {
		progress.Format(e)
	}
}

// BenchmarkReadHead reads the head of a ledger for the prompt.
func BenchmarkReadHead(b *testing.B) {
	path := ledger(b, 1_000_000)
	for b.Loop() {
		if _, err := progress.ReadHead(path, 8<<10); err != nil {
			b.Fatal(err)
		}
	}
}
