package progress

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func entryN(i int) Entry {
	return Entry{Iteration: i, StoryID: "US-001", Outcome: "retry", Summary: "did thing " + strings.Repeat("x", i%7), Totals: Totals{Iterations: i, Tokens: int64(i) * 100}}
}

// notMarkers are lines that look like start markers but are not.
const notMarkers = "=== ralph iteration x · a · b ===\n" +
	"=== ralph iteration ===\n" +
	"=== ralph iteration 1 ===\n" +
	"=== ralph iteration 1 · a ===\n" +
	"=== ralph iteration 1 · a · b\n" +
	" === ralph iteration 1 · a · b ===\n"

func TestParse(t *testing.T) {
	head := "# Progress\n\n## Codebase Patterns\n- use sqlc\n"
	e1, e2, e3 := Format(entryN(1)), Format(entryN(2)), Format(entryN(3))
	torn := e3[:len(e3)/2]
	tests := []struct {
		name      string
		text      string
		wantHead  string
		wantIters []int
		wantTorn  int
	}{
		{"empty", "", "", nil, 0},
		{"head only", head, head, nil, 0},
		{"head without newline", "notes", "notes", nil, 0},
		{"entries", head + "\n" + string(e1) + "\n" + string(e2), head + "\n", []int{1, 2}, 0},
		{"no head", string(e1), "", []int{1}, 0},
		{"torn last", head + string(e1) + string(torn), head, []int{1}, 1},
		{"torn middle", string(e1) + string(torn) + "\n" + string(e2), "", []int{1, 2}, 1},
		{"torn before end marker's newline", string(e1) + string(e2[:len(e2)-1]), "", []int{1, 2}, 0},
		{"start marker only", string(e1) + "=== ralph iteration 2 · US-001 · retry ===", "", []int{1}, 1},
		{"wrong end marker", strings.Replace(string(e1), "end of iteration 1", "end of iteration 9", 1), "", nil, 1},
		{"crlf", strings.ReplaceAll(head+string(e1), "\n", "\r\n"), strings.ReplaceAll(head, "\n", "\r\n"), []int{1}, 0},
		{"garbage between entries", string(e1) + "junk\n\n" + string(e2) + "more junk", "", []int{1, 2}, 0},
		{"not a marker", notMarkers, notMarkers, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotHead, entries, gotTorn, err := Parse(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if gotHead != tt.wantHead {
				t.Errorf("head = %q, want %q", gotHead, tt.wantHead)
			}
			var iters []int
			for _, e := range entries {
				iters = append(iters, e.Iteration)
			}
			if !reflect.DeepEqual(iters, tt.wantIters) {
				t.Errorf("iterations = %v, want %v", iters, tt.wantIters)
			}
			if gotTorn != tt.wantTorn {
				t.Errorf("torn = %d, want %d", gotTorn, tt.wantTorn)
			}
		})
	}
}

func TestParseIgnoresUnknownLines(t *testing.T) {
	text := strings.Replace(fullText, "commit: 3f2a9c1\n",
		"reviewer: a future field\n  | with a continuation\nWhat: not a key\n  | orphan continuation\ncommit: 3f2a9c1\n", 1)
	text = strings.Replace(text, "attempt: 2\n", "attempt: two\nattempt: 2\n", 1)
	_, entries, torn, err := Parse(strings.NewReader(text))
	if err != nil || torn != 0 || len(entries) != 1 {
		t.Fatalf("got %d entries, %d torn, %v; want 1 entry", len(entries), torn, err)
	}
	if got, want := entries[0], fullEntry(); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
}

func TestParseMalformedValues(t *testing.T) {
	text := "=== ralph iteration 5 · A · retry ===\n" +
		"time: yesterday\n" +
		"agent: exited badly\n" +
		"usage: lots of tokens · $free\n" +
		"check: lonely\n" +
		"totals: iterations many · tokens 10 · elapsed forever\n" +
		"=== end of iteration 5 ===\n"
	_, entries, _, err := Parse(strings.NewReader(text))
	if err != nil || len(entries) != 1 {
		t.Fatalf("got %d entries, %v; want 1", len(entries), err)
	}
	want := Entry{Iteration: 5, StoryID: "A", Outcome: "retry", Checks: []Check{{Name: "lonely"}}, Totals: Totals{Tokens: 10}}
	if !reflect.DeepEqual(entries[0], want) {
		t.Errorf("got  %#v\nwant %#v", entries[0], want)
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	r := iotest.TimeoutReader(strings.NewReader(strings.Repeat("x", 10000)))
	if _, _, _, err := Parse(r); err == nil {
		t.Errorf("Parse over a failing reader: no error")
	}
	if _, _, _, err := Parse(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("Parse error = %v, want %v", err, boom)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(fullText))
	f.Add([]byte("# head\n\n" + fullText + "\n" + string(Format(entryN(4)))))
	f.Add(Format(entryN(2))[:40])
	f.Add([]byte("=== ralph iteration 1 ·  ·  ===\r\nagent: exit 1 after 1s · claimed blocked · \n  |\n=== end of iteration 1 ==="))
	f.Add([]byte("=== ralph iteration 2 · a · · b ===\ncheck: a · · pass · 1s · optional · timed out\n  | x\nstory: b\n=== end of iteration 2 ===\n"))
	f.Add([]byte("\xff\x00=== ralph iteration -0 · \u2028 · \r ===\n"))
	f.Add([]byte("# head\n\n" + markLine(1) + string(Format(entryN(1))) + "\n" + markLine(2) + "=== ralph iteration 2 · a"))
	// One file per fuzzing process, rewritten for each input: a fresh
	// directory per input would cost more than the parsing.
	path := filepath.Join(f.TempDir(), "progress.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		head, entries, torn, err := Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if torn < 0 || !bytes.HasPrefix(data, []byte(head)) {
			t.Fatalf("torn = %d, head %q is not a prefix of the input", torn, head)
		}
		// Whatever was parsed formats to text that parses back to the
		// same text: Format and Parse agree on every entry.
		for _, e := range entries {
			text := Format(e)
			h2, again, torn2, _ := Parse(bytes.NewReader(text))
			if h2 != "" || torn2 != 0 || len(again) != 1 {
				t.Fatalf("Format(%#v) = %q parses to head %q, %d entries, %d torn", e, text, h2, len(again), torn2)
			}
			if text2 := Format(again[0]); !bytes.Equal(text2, text) {
				t.Fatalf("Format is not stable:\n%q\n%q", text, text2)
			}
		}
		// Reading backwards finds the same entries as reading forwards.
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// An iteration in flight comes after the last complete entry.
		m, err := InFlight(path)
		if err != nil {
			t.Fatal(err)
		}
		if m != nil && len(entries) > 0 && m.Iteration <= entries[len(entries)-1].Iteration {
			t.Fatalf("InFlight = %+v, but the last entry is iteration %d", *m, entries[len(entries)-1].Iteration)
		}
		var back []Entry
		if err := tailFunc(path, 0, 7, func(e Entry) bool { back = append(back, e); return true }); err != nil {
			t.Fatal(err)
		}
		if len(back) != len(entries) {
			t.Fatalf("tail found %d entries, Parse %d", len(back), len(entries))
		}
		for i, e := range back {
			if want := entries[len(entries)-1-i]; !equalEntry(e, want) {
				t.Fatalf("tail entry %d:\n%#v\nParse:\n%#v", i, e, want)
			}
		}
	})
}

// equalEntry is reflect.DeepEqual except that NaN costs are equal, as a
// fuzzed ledger may hold them.
func equalEntry(a, b Entry) bool {
	if a.CostUSD != a.CostUSD && b.CostUSD != b.CostUSD {
		a.CostUSD, b.CostUSD = 0, 0
	}
	if a.Totals.CostUSD != a.Totals.CostUSD && b.Totals.CostUSD != b.Totals.CostUSD {
		a.Totals.CostUSD, b.Totals.CostUSD = 0, 0
	}
	return reflect.DeepEqual(a, b)
}

// TestParseCostNotFinite: a cost that is no finite amount ("NaN", "Inf",
// below 0) is no cost: JSON holds none of them, and no budget compares
// with NaN.
func TestParseCostNotFinite(t *testing.T) {
	for _, c := range []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "infinity", "-1", "1e309"} {
		text := "=== ralph iteration 5 · A · retry ===\n" +
			"usage: 3 input tokens · 4 output tokens · $" + c + "\n" +
			"totals: iterations 5 · tokens 7 · cost $" + c + "\n" +
			"=== end of iteration 5 ===\n"
		_, entries, _, err := Parse(strings.NewReader(text))
		if err != nil || len(entries) != 1 {
			t.Fatalf("$%s: got %d entries, %v; want 1", c, len(entries), err)
		}
		if e := entries[0]; e.CostKnown || e.CostUSD != 0 || e.Totals.CostUSD != 0 || e.InputTokens != 3 || e.Totals.Tokens != 7 {
			t.Errorf("$%s: cost %v (known %v), totals' %v; want none", c, e.CostUSD, e.CostKnown, e.Totals.CostUSD)
		}
	}
}
