package progress

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestTailHeads checks that TailHeads finds the entries TailFunc finds, in
// the same order, and that each Head's Entry is the entry TailFunc parses.
func TestTailHeads(t *testing.T) {
	small, big, torn := tailCases()
	crlf := strings.ReplaceAll(string(Format(entryN(2))), "\n", "\r\n")
	forged := strings.Replace(string(Format(entryN(3))), "=== end of iteration 3 ===", "=== end of iteration 3 ===x", 1)
	mark := string(formatMark(Mark{Iteration: 4, StoryID: "US-001", Attempt: 1, Time: time.Unix(0, 0)}))
	tests := []struct {
		name    string
		entries []Entry
		extra   string
	}{
		{"small", small, ""},
		{"big", big, ""},
		{"torn last", small[:5], torn},
		{"torn in the middle", small[:1], torn + "\n" + string(Format(entryN(22)))},
		{"crlf", small[:1], crlf},
		{"crlf without a newline at the end", small[:1], strings.TrimSuffix(crlf, "\n")},
		{"end marker with more on its line", small[:2], forged},
		{"started marker", small[:3], mark},
		{"started marker, then the entry", small[:3], mark + string(Format(entryN(4)))},
		{"garbage", small[:2], "junk\n=== ralph iteration x · a · b ===\n"},
		{"no entries", nil, "just a head\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeLedger(t, "## Codebase Patterns\n", tt.entries, tt.extra)
			var want []Entry
			if err := TailFunc(path, 0, func(e Entry) bool { want = append(want, e); return true }); err != nil {
				t.Fatal(err)
			}
			var got []Entry
			err := TailHeads(path, 0, func(h Head) bool {
				e := h.Entry()
				if h.Iteration != e.Iteration || h.StoryID != e.StoryID || h.Outcome != e.Outcome {
					t.Errorf("head %d · %s · %s, entry %d · %s · %s", h.Iteration, h.StoryID, h.Outcome, e.Iteration, e.StoryID, e.Outcome)
				}
				got = append(got, e)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("TailHeads found %v, TailFunc %v", iterations(got), iterations(want))
			}
		})
	}
}

// TestTailHeadsStops checks that TailHeads stops when fn says so, and reads
// no further back than it is told.
func TestTailHeadsStops(t *testing.T) {
	var entries []Entry
	for i := 1; i <= 10; i++ {
		entries = append(entries, entryN(i))
	}
	path := writeLedger(t, "", entries, "")
	var seen []int
	TailHeads(path, 0, func(h Head) bool { seen = append(seen, h.Iteration); return h.Iteration > 8 })
	if want := []int{10, 9, 8}; !reflect.DeepEqual(seen, want) {
		t.Errorf("seen %v, want %v", seen, want)
	}
	size := 0
	for _, e := range entries[7:] {
		size += len(Format(e)) + 1
	}
	seen = nil
	TailHeads(path, int64(size+10), func(h Head) bool { seen = append(seen, h.Iteration); return true })
	if want := []int{10, 9, 8}; !reflect.DeepEqual(seen, want) {
		t.Errorf("with a bound, seen %v, want %v", seen, want)
	}
}
