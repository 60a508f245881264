package progress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeLedger writes head and the entries to a new progress.txt, appending
// extra raw text at the end, and returns its path.
func writeLedger(tb testing.TB, head string, entries []Entry, extra string) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString(head)
	for _, e := range entries {
		b.Write(Format(e))
		b.WriteString("\n")
	}
	b.WriteString(extra)
	path := filepath.Join(tb.TempDir(), "progress.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func iterations(entries []Entry) []int {
	var its []int
	for _, e := range entries {
		its = append(its, e.Iteration)
	}
	return its
}

// bigEntry is larger than any block size used in the tests.
func bigEntry(i int) Entry {
	e := entryN(i)
	e.Checks = []Check{{Name: "test", Excerpt: strings.Repeat(fmt.Sprintf("line of output %d\n", i), 5000)}}
	return e
}

// tailCases returns what the tail tests write: 20 small entries, 20 big
// ones, and entry 21 torn before its end.
func tailCases() (small, big []Entry, torn string) {
	for i := 1; i <= 20; i++ {
		small = append(small, entryN(i))
		big = append(big, bigEntry(i))
	}
	torn = string(Format(entryN(21)))
	return small, big, torn[:len(torn)-30]
}

func TestTail(t *testing.T) {
	head := "## Codebase Patterns\n- keep it simple\n"
	small, big, torn := tailCases()
	tests := []struct {
		name    string
		entries []Entry
		extra   string
		n       int
		block   int
		want    []int
	}{
		{"last 3", small, "", 3, 64, []int{18, 19, 20}},
		{"n larger than count", small[:4], "", 10, 64, []int{1, 2, 3, 4}},
		{"one-byte blocks", small[:4], "", 2, 1, []int{3, 4}},
		{"big entries", big, "", 3, 1024, []int{18, 19, 20}},
		{"big entries all", big[:5], "", 9, 4096, []int{1, 2, 3, 4, 5}},
		{"big entries real block", big, "", 2, blockSize, []int{19, 20}},
		{"torn last", small[:5], torn, 2, 64, []int{4, 5}},
		{"torn without newline before", small[:3], "junk without newline", 1, 16, []int{3}},
		{"no entries", nil, "", 5, 64, nil},
		// ralph log -n takes any number: n times an entry's size overflows.
		{"n of 2^52", small[:4], "", 1 << 52, 64, []int{1, 2, 3, 4}},
		{"n of MaxInt", small[:4], "", math.MaxInt, 64, []int{1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeLedger(t, head, tt.entries, tt.extra)
			var got []Entry
			err := tailFunc(path, 0, tt.block, func(e Entry) bool {
				got = append([]Entry{e}, got...)
				return len(got) < tt.n
			})
			if err != nil {
				t.Fatal(err)
			}
			if its := iterations(got); !reflect.DeepEqual(its, tt.want) {
				t.Errorf("iterations = %v, want %v", its, tt.want)
			}
			// Tail with its real block size agrees, entry for entry.
			tail, err := Tail(path, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tail, got) {
				t.Errorf("Tail(%d) = %v, want %v", tt.n, iterations(tail), tt.want)
			}
			for i, e := range got {
				if want := tt.entries[tt.want[i]-1]; !reflect.DeepEqual(e, want) {
					t.Errorf("entry %d differs from what was written", e.Iteration)
				}
			}
		})
	}
}

func TestTailZero(t *testing.T) {
	path := writeLedger(t, "", []Entry{entryN(1)}, "")
	if entries, err := Tail(path, 0); entries != nil || err != nil {
		t.Errorf("Tail(0) = %v, %v; want no entries, no error", iterations(entries), err)
	}
}

// TestTailContext: a TailContext whose context is done reads no further
// and returns the context's error; otherwise it is Tail.
func TestTailContext(t *testing.T) {
	var all []Entry
	for i := 1; i <= 300; i++ {
		all = append(all, entryN(i))
	}
	path := writeLedger(t, "", all, "")
	entries, err := TailContext(context.Background(), path, 250)
	if err != nil || len(entries) != 250 || entries[0].Iteration != 51 || entries[249].Iteration != 300 {
		t.Errorf("TailContext(250) = %v, %v; want 51 to 300", iterations(entries), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	entries, err = TailContext(ctx, path, 250)
	if !errors.Is(err, context.Canceled) || entries != nil {
		t.Errorf("TailContext(250) cancelled = %v, %v; want no entries, %v", iterations(entries), err, context.Canceled)
	}
}

func TestTailMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	entries, err := Tail(path, 5)
	if err != nil || entries != nil {
		t.Errorf("Tail of a missing file = %v, %v; want no entries, no error", entries, err)
	}
	if err := TailFunc(path, 0, func(Entry) bool { t.Error("fn called"); return true }); err != nil {
		t.Errorf("TailFunc of a missing file: %v", err)
	}
}

func TestTailFunc(t *testing.T) {
	var entries []Entry
	for i := 1; i <= 10; i++ {
		e := entryN(i)
		e.StoryID = fmt.Sprintf("US-%d", i%3)
		entries = append(entries, e)
	}
	path := writeLedger(t, "", entries, "")

	t.Run("stop", func(t *testing.T) {
		var seen []int
		err := TailFunc(path, 0, func(e Entry) bool {
			seen = append(seen, e.Iteration)
			return e.StoryID != "US-1" // the last entry of story US-1
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{10}; !reflect.DeepEqual(seen, want) {
			t.Errorf("seen %v, want %v", seen, want)
		}
		seen = nil
		TailFunc(path, 0, func(e Entry) bool {
			seen = append(seen, e.Iteration)
			return e.StoryID != "US-2"
		})
		if want := []int{10, 9, 8}; !reflect.DeepEqual(seen, want) {
			t.Errorf("seen %v, want %v", seen, want)
		}
	})

	t.Run("all", func(t *testing.T) {
		var seen []int
		TailFunc(path, 0, func(e Entry) bool { seen = append(seen, e.Iteration); return true })
		if want := []int{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}; !reflect.DeepEqual(seen, want) {
			t.Errorf("seen %v, want %v", seen, want)
		}
	})

	t.Run("max bytes", func(t *testing.T) {
		// Enough for the last three entries and part of the fourth.
		size := 0
		for _, e := range entries[7:] {
			size += len(Format(e)) + 1
		}
		var seen []int
		err := tailFunc(path, int64(size+10), 4096, func(e Entry) bool { seen = append(seen, e.Iteration); return true })
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{10, 9, 8}; !reflect.DeepEqual(seen, want) {
			t.Errorf("seen %v, want %v", seen, want)
		}
	})
}

func TestReadHead(t *testing.T) {
	head := "# Notes\n\n## Codebase Patterns\n- one\n- two\n"
	tests := []struct {
		name  string
		text  string
		limit int
		want  string
	}{
		{"head and entries", head + string(Format(entryN(1))), 0, head},
		{"head only", head, 1000, head},
		{"exactly the limit", head + string(Format(entryN(1))), len(head), head},
		{"no head", string(Format(entryN(1))), 10, ""},
		{"cut", head + strings.Repeat("- more\n", 100) + string(Format(entryN(1))), 150,
			"# Notes\n\n## Codebase Patterns\n- one\n- two\n" + strings.Repeat("- more\n", 5) + "[the head of progress.txt is longer than 150 bytes; the rest is cut]\n"},
		{"limit below the note", head, 10, "[the head of progress.txt is longer than 10 bytes; the rest is cut]\n"},
		// A long line is cut inside: the start of a head of one line still
		// reaches the prompt.
		{"one long line", strings.Repeat("x", 1<<20), 100, strings.Repeat("x", 27) + "…\n[the head of progress.txt is longer than 100 bytes; the rest is cut]\n"},
		{"a long line after a short one", "# Notes\n" + strings.Repeat("é", 1<<10), 100, "# Notes\n" + strings.Repeat("é", 9) + "…\n[the head of progress.txt is longer than 100 bytes; the rest is cut]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "progress.txt")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadHead(path, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ReadHead(%d) = %q, want %q", tt.limit, got, tt.want)
			}
			if tt.limit > 70 && len(got) > tt.limit {
				t.Errorf("ReadHead(%d) returned %d bytes", tt.limit, len(got))
			}
		})
	}
	got, err := ReadHead(filepath.Join(t.TempDir(), "missing.txt"), 100)
	if got != "" || err != nil {
		t.Errorf("ReadHead of a missing file = %q, %v; want empty, no error", got, err)
	}
}

// BenchmarkTail shows that Tail's cost does not depend on the length of the
// ledger: compare ns/op across the sizes.
func BenchmarkTail(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "progress.txt")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriterSize(f, 1<<20)
			w.WriteString("## Codebase Patterns\n")
			e := entryN(0)
			for i := 1; i <= n; i++ {
				e.Iteration, e.Totals.Iterations = i, i
				w.Write(Format(e))
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				entries, err := Tail(path, 5)
				if err != nil || len(entries) != 5 || entries[4].Iteration != n {
					b.Fatalf("Tail = %d entries, %v", len(entries), err)
				}
			}
		})
	}
}

func TestHeadAround(t *testing.T) {
	entry := "=== ralph iteration 1 · US-001 · done ===\nstory: US-001 x\n=== end of iteration 1 ===\n"
	forged := "=== ralph iteration 7 · US-009 · done ===\n"
	for _, c := range []struct{ name, now, oldLedger, want string }{
		{"a head edited, the ledger rewritten", "# Notes\n- new\n" + strings.Replace(entry, "done", "retry", 1), entry, "# Notes\n- new\n"},
		{"a line forged in the head, the ledger as it was", "# Notes\n" + forged + "- a\n- b\n" + entry, entry, "# Notes\n- a\n- b\n"},
		{"a line forged in the head, the ledger rewritten", "# Notes\n" + forged + "- a\n" + strings.Replace(entry, "x", "y", 1), entry, "# Notes\n- a\n"},
		{"the ledger's first line copied into the head", "# Notes\n" + entry + "- a\n" + entry, entry, "# Notes\nstory: US-001 x\n=== end of iteration 1 ===\n- a\n"},
		{"no ledger before", "# Notes\n" + forged + "- a\n", "", "# Notes\n"},
	} {
		if got := string(HeadAround([]byte(c.now), []byte(c.oldLedger))); got != c.want {
			t.Errorf("%s: HeadAround = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSplitHead(t *testing.T) {
	entry := "=== ralph iteration 1 · US-001 · done ===\nstory: US-001 x\n=== end of iteration 1 ===\n"
	mark := "=== ralph started iteration 2 · US-002 · attempt 1 · 2026-01-02T03:04:05Z ===\n"
	for _, c := range []struct{ name, head, ledger string }{
		{"head and ledger", "# Notes\n\n", entry},
		{"no head", "", entry},
		{"no ledger", "# Notes\n=== ralph notes ===\n", ""},
		{"a line like ralph's in the head", "# Notes\n=== ralph notes ===\n- x\n", entry},
		{"a started marker first", "# Notes\r\n", mark + entry},
		{"empty", "", ""},
	} {
		head, ledger := SplitHead([]byte(c.head + c.ledger))
		if string(head) != c.head || string(ledger) != c.ledger {
			t.Errorf("%s: SplitHead = %q, %q; want %q, %q", c.name, head, ledger, c.head, c.ledger)
		}
		got, err := ReadHead(writeLedger(t, c.head+c.ledger, nil, ""), 0)
		if err != nil || got != c.head {
			t.Errorf("%s: ReadHead = %q, %v; want %q", c.name, got, err, c.head)
		}
	}
}
