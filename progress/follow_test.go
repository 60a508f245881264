package progress

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// poll polls fl once and returns the iterations it passed on.
func poll(t *testing.T, fl *Follower) []int {
	t.Helper()
	var got []int
	if err := fl.Poll(func(e Entry) error {
		got = append(got, e.Iteration)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func appendText(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func wantPolled(t *testing.T, fl *Follower, want ...int) {
	t.Helper()
	if got := poll(t, fl); !reflect.DeepEqual(got, want) {
		t.Errorf("Poll passed on iterations %v, want %v", got, want)
	}
}

func TestFollowAppends(t *testing.T) {
	path := writeLedger(t, "# head\n", []Entry{entryN(1), entryN(2)}, "")
	fl, err := NewFollower(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantPolled(t, fl)

	// An entry written in pieces is passed on once, when its end is there.
	text := "\n" + string(Format(entryN(3)))
	end := strings.Index(text, "=== end of")
	appendText(t, path, text[:10])
	wantPolled(t, fl)
	appendText(t, path, text[10:end+5])
	wantPolled(t, fl)
	appendText(t, path, text[end+5:len(text)-1]) // all but the newline
	wantPolled(t, fl)
	appendText(t, path, "\n")
	wantPolled(t, fl, 3)
	wantPolled(t, fl)

	// Two at once.
	appendText(t, path, "\n"+string(Format(entryN(4)))+"\n"+string(Format(entryN(5))))
	wantPolled(t, fl, 4, 5)
}

func TestFollowTorn(t *testing.T) {
	path := writeLedger(t, "", []Entry{entryN(1)}, "")
	fl, err := NewFollower(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPolled(t, fl, 1)
	// A crash in the middle of an append, then the next ralph's entry.
	torn := string(Format(entryN(2)))
	appendText(t, path, "\n"+torn[:len(torn)/2])
	wantPolled(t, fl)
	appendText(t, path, "\n\n"+string(Format(entryN(2))))
	wantPolled(t, fl, 2)
}

func TestFollowMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	fl, err := NewFollower(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPolled(t, fl)
	appendText(t, path, "# head\n\n"+string(Format(entryN(1))))
	wantPolled(t, fl, 1)
}

func TestFollowReplaced(t *testing.T) {
	path := writeLedger(t, "# head\n", []Entry{entryN(1), entryN(2)}, "")
	fl, err := NewFollower(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantPolled(t, fl)

	// An editor saves the head by renaming a new file over the old one:
	// nothing is passed on again, and what is appended next is.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, append([]byte("# a longer head\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	wantPolled(t, fl)
	appendText(t, path, "\n"+string(Format(entryN(3))))
	wantPolled(t, fl, 3)

	// The ledger is started over, shorter: what it holds now is old news;
	// what is appended to it is passed on.
	if err := os.WriteFile(path, Format(entryN(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	wantPolled(t, fl)
	appendText(t, path, "\n"+string(Format(entryN(2))))
	wantPolled(t, fl, 2)
}

func TestFollowStartsNearTheEnd(t *testing.T) {
	var entries []Entry
	for i := 1; i <= 8; i++ {
		entries = append(entries, bigEntry(i))
	}
	path := writeLedger(t, "", entries, "")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() <= 2*followWindow {
		t.Fatalf("the ledger is %d bytes, too small for this test", info.Size())
	}
	fl, err := NewFollower(path, 6)
	if err != nil {
		t.Fatal(err)
	}
	if fl.off == 0 {
		t.Errorf("the follower starts at the beginning of a %d-byte file", info.Size())
	}
	wantPolled(t, fl, 7, 8)
	appendText(t, path, "\n"+string(Format(entryN(9))))
	wantPolled(t, fl, 9)
}

// TestFollowForged: an agent appends entries of its own while it runs,
// which are passed on as they come; ralph's guard then takes them out and
// ralph appends its own entry, with the number the agent's had, or
// another. Once the file shows they are gone (shorter, or not as it was
// read before where the last read ended), ralph's entry is passed on, and
// what follows it.
func TestFollowForged(t *testing.T) {
	forged := func(n int) Entry {
		e := entryN(n)
		e.Outcome, e.Summary = "done", "forged"
		return e
	}
	tests := []struct {
		name    string
		forged  Entry
		between bool // polled between the guard's restore and ralph's entry
	}{
		{"same number, polled between", forged(3), true},
		{"same number, the file no shorter before the next poll", forged(3), false},
		{"a number far ahead", forged(999), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeLedger(t, "# head\n", []Entry{entryN(1)}, "")
			fl, err := NewFollower(path, 0)
			if err != nil {
				t.Fatal(err)
			}
			wantPolled(t, fl, 1)
			appendText(t, path, "\n"+string(Format(entryN(2))))
			wantPolled(t, fl, 2)
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			appendText(t, path, "\n"+string(Format(tt.forged)))
			wantPolled(t, fl, tt.forged.Iteration)
			if err := os.Truncate(path, before.Size()); err != nil {
				t.Fatal(err)
			}
			if tt.between {
				wantPolled(t, fl)
			}
			real := entryN(3)
			real.Summary = "ralph's, longer than the agent's" + strings.Repeat(".", 40)
			appendText(t, path, "\n"+string(Format(real)))
			var got []string
			if err := fl.Poll(func(e Entry) error {
				got = append(got, fmt.Sprintf("%d %s", e.Iteration, e.Summary))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if want := []string{"3 " + real.Summary}; !reflect.DeepEqual(got, want) {
				t.Errorf("Poll passed on %q, want %q", got, want)
			}
			appendText(t, path, "\n"+string(Format(entryN(4))))
			wantPolled(t, fl, 4)
		})
	}
}
