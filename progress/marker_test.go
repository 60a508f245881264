package progress

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var markTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mark(n int) Mark {
	return Mark{Iteration: n, StoryID: "US-001", Attempt: 2, Time: markTime}
}

func markLine(n int) string { return string(formatMark(mark(n))) }

// baselineMark is mark(n) with the baseline of a story's first attempt,
// and the guard's digests.
func baselineMark(n int) Mark {
	m := mark(n)
	m.Guarded = []Sum{{Name: "harness.toml", Digest: "0123456789abcdef"}, {Name: "scripts/a b.sh", Digest: "fedcba9876543210"}}
	m.Baseline = []Check{
		{Name: "unit", Duration: 1500 * time.Millisecond, Excerpt: "--- FAIL: TestOld\n=== ralph started iteration 9 · X · attempt 1 · 2026-01-02T03:04:05Z ==="},
		{Name: "lint", Passed: true, Duration: time.Second},
	}
	return m
}

// takingMark is mark(n) while the story's baseline checks run.
func takingMark(n int) Mark {
	m := mark(n)
	m.TakingBaseline = true
	return m
}

func TestFormatMark(t *testing.T) {
	got := markLine(5)
	want := "=== ralph started iteration 5 · US-001 · attempt 2 · 2026-01-02T03:04:05Z ===\n"
	if got != want {
		t.Errorf("formatMark = %q, want %q", got, want)
	}
	// The baseline follows as an entry writes it; no line of an excerpt
	// can pass for a marker.
	taking := takingMark(5)
	if got, want := "=== ralph started iteration 5 · US-001 · attempt 2 · baseline checks · 2026-01-02T03:04:05Z ===\n", string(formatMark(taking)); got != want {
		t.Errorf("formatMark = %q, want %q", got, want)
	}
	got = string(formatMark(baselineMark(5)))
	want += "guarded: 0123456789abcdef harness.toml\n" +
		"guarded: fedcba9876543210 scripts/a b.sh\n" +
		"baseline: unit · fail · 1.5s\n" +
		"  | --- FAIL: TestOld\n" +
		"  | === ralph started iteration 9 · X · attempt 1 · 2026-01-02T03:04:05Z ===\n" +
		"baseline: lint · pass · 1s\n"
	if got != want {
		t.Errorf("formatMark = %q, want %q", got, want)
	}
}

func TestParseMark(t *testing.T) {
	tests := []struct {
		name string
		m    Mark
		want Mark // after sanitising
	}{
		{"plain", mark(3), mark(3)},
		{"separator in the story id", Mark{Iteration: 1, StoryID: "a · attempt 1 · b", Attempt: 1, Time: markTime},
			Mark{Iteration: 1, StoryID: "a · attempt 1 · b", Attempt: 1, Time: markTime}},
		{"newline in the story id", Mark{Iteration: 12, StoryID: "x\ny", Attempt: 7, Time: markTime},
			Mark{Iteration: 12, StoryID: "x y", Attempt: 7, Time: markTime}},
		{"taking the baseline", takingMark(4), takingMark(4)},
		{"a story id that looks like the phase", Mark{Iteration: 2, StoryID: "S · baseline checks", Attempt: 1, Time: markTime},
			Mark{Iteration: 2, StoryID: "S · baseline checks", Attempt: 1, Time: markTime}},
		{"time in another zone", Mark{Iteration: 2, StoryID: "S", Attempt: 1, Time: markTime.In(time.FixedZone("X", 3600))},
			Mark{Iteration: 2, StoryID: "S", Attempt: 1, Time: markTime}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := strings.TrimSuffix(string(formatMark(tt.m)), "\n")
			got, ok := parseMark(line)
			if !ok {
				t.Fatalf("parseMark(%q): not a marker", line)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseMark(%q) = %+v, want %+v", line, got, tt.want)
			}
			if _, _, _, ok := parseStart(line); ok {
				t.Errorf("%q also reads as an entry's start marker", line)
			}
		})
	}
	for _, line := range []string{
		"=== ralph started iteration 5 · US-001 · attempt 2 · 2026-01-02T03:04:05Z",
		"=== ralph started iteration x · US-001 · attempt 2 · 2026-01-02T03:04:05Z ===",
		"=== ralph started iteration 5 · US-001 · attempt x · 2026-01-02T03:04:05Z ===",
		"=== ralph started iteration 5 · US-001 · attempt 2 · yesterday ===",
		"=== ralph started iteration 5 · US-001 · 2026-01-02T03:04:05Z ===",
		"=== ralph started iteration 5 ===",
		"=== ralph started iteration  ===",
		" === ralph started iteration 5 · US-001 · attempt 2 · 2026-01-02T03:04:05Z ===",
	} {
		if m, ok := parseMark(line); ok {
			t.Errorf("parseMark(%q) = %+v, want no marker", line, m)
		}
	}
}

// TestReadersSkipMarks: markers are invisible to every reader of entries,
// and one ends the head.
func TestReadersSkipMarks(t *testing.T) {
	head := "## Codebase Patterns\n- keep it simple\n"
	e1, e2 := string(Format(entryN(1))), string(Format(entryN(2)))
	text := head + "\n" + markLine(1) + e1 + "\n" + string(formatMark(baselineMark(2))) + e2 + "\n" + markLine(3)
	path := filepath.Join(t.TempDir(), "progress.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	gotHead, entries, torn := parseFile(t, path)
	if gotHead != head+"\n" || torn != 0 || !reflect.DeepEqual(iterations(entries), []int{1, 2}) {
		t.Errorf("Parse: head %q, iterations %v, torn %d; want %q, [1 2], 0", gotHead, iterations(entries), torn, head+"\n")
	}
	if !reflect.DeepEqual(entries, []Entry{entryN(1), entryN(2)}) {
		t.Errorf("Parse: entries differ from what was written")
	}
	tail, err := Tail(path, 5)
	if err != nil || !reflect.DeepEqual(tail, entries) {
		t.Errorf("Tail = %v, %v; want %v", iterations(tail), err, iterations(entries))
	}
	if h, err := ReadHead(path, 0); err != nil || h != head+"\n" {
		t.Errorf("ReadHead = %q, %v; want %q", h, err, head+"\n")
	}
	fl, err := NewFollower(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPolled(t, fl, 1, 2)

	// A marker before any entry ends the head too: it is not the human's,
	// nor is its baseline.
	only := head + "\n" + string(formatMark(baselineMark(1)))
	if err := os.WriteFile(path, []byte(only), 0o644); err != nil {
		t.Fatal(err)
	}
	if gotHead, entries, torn := parseFile(t, path); gotHead != head+"\n" || len(entries) != 0 || torn != 0 {
		t.Errorf("Parse of a head and a marker: head %q, %d entries, %d torn", gotHead, len(entries), torn)
	}
	if h, err := ReadHead(path, 0); err != nil || h != head+"\n" {
		t.Errorf("ReadHead = %q, %v; want %q", h, err, head+"\n")
	}
}

// TestBeginAppend: the entry follows its marker directly, and InFlight sees
// the marker only until then.
func TestBeginAppend(t *testing.T) {
	head := "## Codebase Patterns"
	path := filepath.Join(t.TempDir(), "progress.txt")
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, path)
	// Iteration 2 is a story's first attempt, with a baseline: a marker
	// says so while its checks run, another holds it once they end.
	marks := []Mark{mark(1), baselineMark(2), mark(3)}
	taking := takingMark(2)
	for i := 1; i <= 3; i++ {
		if i == 2 {
			if err := l.Begin(taking); err != nil {
				t.Fatal(err)
			}
			if m, err := InFlight(path); err != nil || m == nil || !reflect.DeepEqual(*m, taking) {
				t.Fatalf("InFlight while the baseline is taken = %+v, %v; want %+v", m, err, taking)
			}
		}
		if err := l.Begin(marks[i-1]); err != nil {
			t.Fatal(err)
		}
		m, err := InFlight(path)
		if err != nil || m == nil || !reflect.DeepEqual(*m, marks[i-1]) {
			t.Fatalf("InFlight after Begin(%d) = %+v, %v; want %+v", i, m, err, marks[i-1])
		}
		if err := l.Append(entryN(i)); err != nil {
			t.Fatal(err)
		}
		if m, err := InFlight(path); err != nil || m != nil {
			t.Fatalf("InFlight after Append(%d) = %+v, %v; want none", i, m, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := head + "\n\n" + markLine(1) + string(Format(entryN(1))) +
		"\n" + string(formatMark(taking)) +
		"\n" + string(formatMark(marks[1])) + string(Format(entryN(2))) +
		"\n" + markLine(3) + string(Format(entryN(3)))
	if string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}
}

// TestBeginAppendLongBaseline: a marker whose baseline is longer than the
// end of the file Append reads (lastWindow) is not seen there: the entry
// follows it after a blank line, and is still the marker's, as every
// reader takes it.
func TestBeginAppendLongBaseline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	l := openLedger(t, path)
	m := mark(1)
	var lines []string
	for i := range 300 {
		lines = append(lines, fmt.Sprintf("--- FAIL: TestLegacy%03d (0.00s)", i))
	}
	m.Baseline = []Check{{Name: "unit", Duration: time.Second, Excerpt: strings.Join(lines, "\n")}}
	if n := len(formatMark(m)); n <= lastWindow {
		t.Fatalf("the marker is %d bytes, not past lastWindow (%d)", n, lastWindow)
	}
	if err := l.Begin(m); err != nil {
		t.Fatal(err)
	}
	if got, err := InFlight(path); err != nil || got == nil || !reflect.DeepEqual(*got, m) {
		t.Fatalf("InFlight after Begin = %v, %v; want the long marker", got, err)
	}
	if err := l.Append(entryN(1)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(formatMark(m)) + "\n" + string(Format(entryN(1))); string(data) != want {
		t.Errorf("file:\n%.300s…\nwant the marker, a blank line and the entry", data)
	}
	if got, err := InFlight(path); err != nil || got != nil {
		t.Errorf("InFlight after Append = %+v, %v; want none", got, err)
	}
	if _, entries, _ := parseFile(t, path); !reflect.DeepEqual(iterations(entries), []int{1}) {
		t.Errorf("entries %v, want iteration 1", iterations(entries))
	}
}

func TestBeginAfterTorn(t *testing.T) {
	e1 := string(Format(entryN(1)))
	path := filepath.Join(t.TempDir(), "progress.txt")
	if err := os.WriteFile(path, []byte(e1+"\n=== ralph iteration 2 · US-001 · retry ===\ntime: 20"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, path)
	if err := l.Begin(mark(2)); err != nil {
		t.Fatal(err)
	}
	if m, err := InFlight(path); err != nil || m == nil || m.Iteration != 2 {
		t.Fatalf("InFlight = %+v, %v; want iteration 2", m, err)
	}
	if err := l.Append(entryN(2)); err != nil {
		t.Fatal(err)
	}
	_, entries, torn := parseFile(t, path)
	if !reflect.DeepEqual(iterations(entries), []int{1, 2}) || torn != 1 {
		t.Errorf("iterations %v, torn %d; want [1 2], 1", iterations(entries), torn)
	}
}

func TestInFlight(t *testing.T) {
	head := "## Codebase Patterns\n"
	e := func(i int) string { return string(Format(entryN(i))) }
	big := func(i int) string { return string(Format(bigEntry(i))) }
	torn := func(i int) string { s := e(i); return s[:len(s)-20] }
	tests := []struct {
		name string
		text string
		want int // the marker's iteration; 0: none
	}{
		{"empty", "", 0},
		{"head only", head, 0},
		{"marker after the head", head + "\n" + markLine(1), 1},
		{"marker first", markLine(1), 1},
		{"marker without newline", head + "\n" + strings.TrimSuffix(markLine(1), "\n"), 1},
		{"marker with CRLF", head + "\r\n" + strings.ReplaceAll(markLine(1), "\n", "\r\n"), 1},
		{"entry after the marker", head + markLine(1) + e(1), 0},
		{"marker after an entry", head + markLine(1) + e(1) + "\n" + markLine(2), 2},
		{"torn entry after the marker", e(1) + "\n" + markLine(2) + torn(2), 2},
		{"marker after a torn entry", e(1) + "\n" + torn(2) + "\n" + markLine(2), 2},
		{"torn marker", e(1) + "\n" + markLine(2)[:30], 0},
		{"torn marker taking the baseline", e(1) + "\n" + strings.TrimSuffix(string(formatMark(takingMark(2))), " ===\n"), 0},
		{"the last of two markers", e(1) + "\n" + markLine(2) + markLine(3), 3},
		{"stale marker", e(1) + "\n" + e(2) + "\n" + markLine(2), 0},
		{"marker before the last entry only", markLine(1) + e(1) + "\n" + markLine(2) + e(2), 0},
		{"text after the end marker", e(1) + "notes\n" + markLine(2) + "more\n", 2},
		{"behind big torn entries", big(1) + "\n" + markLine(2) + big(2)[:70000] + "\n" + big(2)[:90000], 2},
		{"big entries", big(1) + "\n" + markLine(2) + big(2) + "\n" + markLine(3), 3},
		{"marker with its baseline", e(1) + "\n" + string(formatMark(baselineMark(2))), 2},
		{"marker taking its baseline, then the marker with it", e(1) + "\n" + string(formatMark(takingMark(2))) + "\n" + string(formatMark(baselineMark(2))), 2},
		{"marker with its baseline, text after it", e(1) + "\n" + string(formatMark(baselineMark(2))) + "notes\nbaseline: x · pass · 1s\n", 2},
		{"end marker text inside a value", head + markLine(1) + string(Format(Entry{Iteration: 1, Summary: "x\n=== end of iteration 1 ===\n" + markLine(9)})), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "progress.txt")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := InFlight(path)
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			if m != nil {
				got = m.Iteration
				want := mark(got)
				if strings.Contains(tt.text, "baseline:") {
					want = baselineMark(got)
				}
				if !reflect.DeepEqual(*m, want) {
					t.Errorf("InFlight = %+v, want %+v", *m, want)
				}
			}
			if got != tt.want {
				t.Errorf("InFlight: iteration %d, want %d", got, tt.want)
			}
		})
	}
	m, err := InFlight(filepath.Join(t.TempDir(), "missing.txt"))
	if m != nil || err != nil {
		t.Errorf("InFlight of a missing file = %+v, %v; want nil, nil", m, err)
	}
}

// TestInFlightTornBaseline: a marker's baseline cut short by a kill or a
// crash keeps its whole lines only. A piece of a failure line could pass
// for another failure, which would then count as known.
func TestInFlightTornBaseline(t *testing.T) {
	block := string(formatMark(baselineMark(2)))
	cut := strings.Index(block, "TestOld") + len("TestO")
	path := filepath.Join(t.TempDir(), "progress.txt")
	if err := os.WriteFile(path, []byte(string(Format(entryN(1)))+"\n"+block[:cut]), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := InFlight(path)
	if err != nil || m == nil {
		t.Fatalf("InFlight = %+v, %v; want iteration 2", m, err)
	}
	// The digests are dropped with the torn block: one cut short would
	// lack a file's.
	want := mark(2)
	want.Baseline = []Check{{Name: "unit", Duration: 1500 * time.Millisecond}}
	if !reflect.DeepEqual(*m, want) {
		t.Errorf("InFlight = %+v, want %+v", *m, want)
	}
	// A block that is whole keeps them, a torn entry or other text after
	// it or not.
	for _, after := range []string{"", string(Format(entryN(2)))[:80], "x", "notes\nmore"} {
		if err := os.WriteFile(path, []byte(string(Format(entryN(1)))+"\n"+block+after), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err = InFlight(path)
		if err != nil || m == nil {
			t.Fatalf("InFlight = %+v, %v; want iteration 2", m, err)
		}
		if want := baselineMark(2).Guarded; !reflect.DeepEqual(m.Guarded, want) {
			t.Errorf("InFlight with %q after the block: digests %+v, want %+v", after, m.Guarded, want)
		}
	}
}

// TestDrop: the line that drops a marker taking its baseline ends its
// iteration's flight; a marker after it is in flight again.
func TestDrop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	l := openLedger(t, path)
	if err := l.Append(entryN(1)); err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(takingMark(2)); err != nil {
		t.Fatal(err)
	}
	if err := l.Drop(takingMark(2)); err != nil {
		t.Fatal(err)
	}
	if m, err := InFlight(path); err != nil || m != nil {
		t.Fatalf("InFlight after Drop = %+v, %v; want none", m, err)
	}
	if err := l.Begin(takingMark(2)); err != nil {
		t.Fatal(err)
	}
	if m, err := InFlight(path); err != nil || m == nil || !reflect.DeepEqual(*m, takingMark(2)) {
		t.Fatalf("InFlight after Begin = %+v, %v; want %+v", m, err, takingMark(2))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dropped := "=== ralph dropped iteration 2 · US-001 · attempt 2 · baseline checks · 2026-01-02T03:04:05Z ===\n"
	if !strings.Contains(string(data), string(formatMark(takingMark(2)))+dropped+"\n") {
		t.Errorf("file:\n%s\nwant the marker, then %q", data, dropped)
	}
	// Every reader skips it, as it skips markers.
	_, entries, torn, err := Parse(strings.NewReader(string(data)))
	if err != nil || len(entries) != 1 || torn != 0 {
		t.Errorf("Parse: %d entries, %d torn, %v", len(entries), torn, err)
	}
}

// TestDropGuarded: the line that drops a marker keeping the guard's
// digests is that line alone; the digests stay with the marker.
func TestDropGuarded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "progress.txt")
	l := openLedger(t, path)
	m := takingMark(2)
	m.Guarded = baselineMark(2).Guarded
	if err := l.Begin(m); err != nil {
		t.Fatal(err)
	}
	if err := l.Drop(m); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := string(formatMark(m)) + "=== ralph dropped iteration 2 · US-001 · attempt 2 · baseline checks · 2026-01-02T03:04:05Z ===\n"
	if string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}
	if got, err := InFlight(path); err != nil || got != nil {
		t.Errorf("InFlight after Drop = %+v, %v; want none", got, err)
	}
}
