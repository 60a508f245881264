package prd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/bench/fixture"
)

// parseWith parses data with lists of stories split in two from min bytes
// on, on two CPUs, and says what came of it: the error, or the stories,
// whether the text was laid out as Marshal writes it, and Marshal's output.
// The first half's decoder takes part of what the second has left
// whenever it is done first (see steal), which depends on the timing;
// with late, the second starts only then, and the first always takes
// part of it. Whatever the timing, the result must be the same.
func parseWith(t *testing.T, min int, late bool, data []byte) string {
	t.Helper()
	defer func(n, m int, l bool) { splitMin, stealMin, lateSecond = n, m, l }(splitMin, stealMin, lateSecond)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	splitMin, stealMin, lateSecond = min, 0, late
	forget()
	f, err := Parse(data, "prd.json")
	forget()
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "canonical %v, %d stories\n", f.canonical, len(f.Stories))
	for _, s := range f.Stories {
		fmt.Fprintf(&b, "%+v canonical %v\n", exported(s), s.canonical)
		if !bytes.Equal(s.raw, bytes.TrimSpace(s.raw)) || len(s.raw) == 0 || s.raw[0] != '{' {
			t.Fatalf("story %s: raw text %q", s.ID, s.raw)
		}
	}
	b.WriteString(mustMarshal(t, f))
	return b.String()
}

// splits reports whether the decoder of data would split its list of
// stories, and where its first half would end.
func splits(data []byte) (at int, ok bool) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	d := &decoder{text: newText(data), name: "prd.json", blocks: true, path: []step{{key: "userStories"}}}
	j := bytes.Index(data, []byte(`"userStories": [`)) + len(`"userStories": [`)
	h := d.split(skipSpace(data, j))
	if h == nil {
		return 0, false
	}
	h.cancel()
	return h.at, true
}

// TestParseSplit decodes long lists of stories in two halves at once and
// checks that what comes of it, a file or the errors, is what one decoder
// alone makes of the same text, where the halves meet too.
func TestParseSplit(t *testing.T) {
	big := fixture.PRD(2000, 1000) // 1 MB, as Marshal writes it
	if len(big) < 2*splitMin {
		t.Fatalf("the fixture is too short to split: %d bytes", len(big))
	}
	at, ok := splits(big)
	if !ok {
		t.Fatal("the fixture's list of stories is not split")
	}
	if !bytes.HasPrefix(big[at-1:], []byte("},\n    {")) || at < len(big)/2 {
		t.Fatalf("the first half ends at %d: %q", at, big[at-20:at+20])
	}
	// edit replaces the first old in big, or in the story with that id.
	edit := func(data []byte, id, old, new string) []byte {
		i := bytes.Index(data, []byte(`"id": "`+id+`"`))
		if i < 0 {
			t.Fatalf("no story %s", id)
		}
		j := bytes.Index(data[i:], []byte(old))
		if j < 0 {
			t.Fatalf("story %s has no %q", id, old)
		}
		return append(append(append([]byte{}, data[:i+j]...), new...), data[i+j+len(old):]...)
	}
	last := fixture.StoryID(1990)
	// indented lays big out with tabs: nothing to split at.
	var indented bytes.Buffer
	if err := json.Indent(&indented, big, "", "\t"); err != nil {
		t.Fatal(err)
	}
	// answered has, in the story the first half ends with, answers laid
	// out as stories are: what looks like the end of a story is inside
	// it, past the middle.
	answers := ",\n      \"answers\": [\n    {\n\"question\": \"q\", \"answer\": \"a\"\n    },\n    {\n\"question\": \"r\", \"answer\": \"b\"\n    }\n]"
	end := at - len("\n    }")
	answered := append(append(append([]byte{}, big[:end]...), answers...), big[end:]...)
	// trailing has few stories and a long member after them laid out as
	// they are: what looks like the end of a story is past the list.
	var trailing bytes.Buffer
	trailing.WriteString("{\n  \"userStories\": [\n    {\n      \"id\": \"A\",\n      \"title\": \"a\"\n    }\n  ],\n  \"x-more\": [\n")
	for i := range 20000 {
		if i > 0 {
			trailing.WriteString(",\n")
		}
		fmt.Fprintf(&trailing, "    {\n      \"n\": %d\n    }", i)
	}
	trailing.WriteString("\n  ]\n}\n")

	tests := []struct {
		name  string
		data  []byte
		split bool // the guess is to be made, right or wrong
	}{
		{"as Marshal writes it", big, true},
		{"a type error in the second half", edit(big, last, `"priority": 1990`, `"priority": "high"`), true},
		{"a type error in the first half", edit(big, fixture.StoryID(10), `"priority": 10`, `"priority": "high"`), true},
		{"a type error in each half", edit(edit(big, last, `"title": `, `"title": 1, "x": `), fixture.StoryID(3), `"passes": `, `"passes": "no", "y": `), true},
		{"a syntax error in the second half", edit(big, last, `"priority": 1990`, `"priority": 1990,`), true},
		{"not an object in the second half", edit(big, last, `{`, `[1], {`), true},
		{"a story's own problem in the second half", edit(big, last, `"title": "`, `"title": "\u001b`), true},
		{"a story's own problem in the first half", edit(big, fixture.StoryID(10), `"title": "`, `"title": "\u001b`), true},
		{"the same id in both halves", edit(big, last, `"id": "`+last+`"`, `"id": "US-00002"`), true},
		{"a dependency on a story of the other half", edit(big, fixture.StoryID(2), `"title"`, `"dependsOn": ["`+last+`"], "title"`), true},
		{"a dependency cycle across the halves", edit(edit(big, fixture.StoryID(2), `"title"`, `"dependsOn": ["`+last+`"], "title"`), last, `"title"`, `"dependsOn": ["US-00002"], "title"`), true},
		{"laid out with tabs", indented.Bytes(), false},
		{"laid out otherwise in the second half", edit(big, last, `"priority": 1990`, `"priority":  1990`), true},
		{"the separator inside a story", answered, true},
		{"the separator after the list", trailing.Bytes(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := splits(tt.data); ok != tt.split {
				t.Fatalf("split: %v, want %v", ok, tt.split)
			}
			alone := parseWith(t, math.MaxInt, false, tt.data)
			if got := parseWith(t, splitMin, false, tt.data); got != alone {
				t.Errorf("in two halves:\n%.2000s\nalone:\n%.2000s", got, alone)
			}
			if got := parseWith(t, splitMin, true, tt.data); got != alone {
				t.Errorf("in three parts:\n%.2000s\nalone:\n%.2000s", got, alone)
			}
		})
	}
}

// FuzzSplit checks that a list of stories decoded in two halves, split
// wherever the text allows, comes out as one decoder alone makes of it.
func FuzzSplit(f *testing.F) {
	for _, seed := range []string{canonical, messy, typeErrors, string(fixture.PRD(5, 2)),
		"{\n  \"userStories\": [\n    {\n      \"id\": \"A\"\n    },\n    {\n      \"id\": 1\n    },\n    {\n      \"id\": \"A\"\n    }\n  ]\n}\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		alone := parseWith(t, math.MaxInt, false, data)
		if got := parseWith(t, 0, false, data); got != alone {
			t.Fatalf("in two halves:\n%s\nalone:\n%s", got, alone)
		}
		if got := parseWith(t, 0, true, data); got != alone {
			t.Fatalf("in three parts:\n%s\nalone:\n%s", got, alone)
		}
	})
}

// TestSteal: the first half's decoder, done first, decodes the latter part
// of what the second half has left, and the second stops where that part
// begins; or, when that place is no story's end, the second goes on to
// the list's end and the part is not used. The second half is decoded
// here, after the steal, as the slower of two CPUs would.
func TestSteal(t *testing.T) {
	defer func(m int) { stealMin = m }(stealMin)
	stealMin = 0
	data := fixture.PRD(2000, 1000)
	at, ok := splits(data)
	if !ok {
		t.Fatal("the fixture's list of stories is not split")
	}
	start := at + len(",\n    ")
	second := func() (*decoder, *half) {
		d := &decoder{text: newText(data), name: "prd.json", blocks: true, path: []step{{key: "userStories"}}}
		h := &half{at: at, done: make(chan struct{})}
		h.pos.Store(int64(at))
		h.limit.Store(math.MaxInt64)
		h.d = &decoder{text: d.text, name: d.name, blocks: true, canonical: true, part: h, path: slices.Clone(d.path)}
		return d, h
	}
	ids := func(stories []*Story) []string {
		var s []string
		for _, st := range stories {
			s = append(s, st.ID)
		}
		return s
	}
	// The second half's stories: from the one at start to the last.
	first := 2000
	for !bytes.HasPrefix(data[start:], []byte("{\n      \"id\": \""+fixture.StoryID(first)+"\"")) {
		if first--; first == 0 {
			t.Fatalf("no story at the second half's start: %q", data[start:start+40])
		}
	}
	var want []string
	for i := first; i <= 2000; i++ {
		want = append(want, fixture.StoryID(i))
	}

	d, h := second()
	third := h.steal(d)
	if third == nil {
		t.Fatal("nothing stolen from a second half that has not begun")
	}
	if third.at <= at || len(third.stories) == 0 || len(third.d.errs) > 0 {
		t.Fatalf("the third part: at %d (the second half at %d), %d stories, errors %v", third.at, at, len(third.stories), third.d.errs)
	}
	h.stories, h.end = h.d.storiesFrom(start, len(d.path), nil)
	close(h.done)
	if !h.atLimit || h.end != third.at {
		t.Fatalf("the second half ended at %d (at the limit: %v), want at the third part's start %d", h.end, h.atLimit, third.at)
	}
	if got := append(ids(h.stories), ids(third.stories)...); !slices.Equal(got, want) {
		t.Errorf("the second half and the third part hold %d stories, %v ... %v; want the second half's %d", len(got), got[:2], got[len(got)-2:], len(want))
	}

	// A limit within a story: the second half passes it.
	d, h = second()
	h.limit.Store(int64(start + 10))
	h.stories, h.end = h.d.storiesFrom(start, len(d.path), nil)
	close(h.done)
	if h.atLimit || h.end <= start || h.limit.Load() != math.MaxInt64 {
		t.Errorf("past a limit within a story: ended at %d, at the limit %v, limit %d", h.end, h.atLimit, h.limit.Load())
	}
	if got := ids(h.stories); !slices.Equal(got, want) {
		t.Errorf("past a limit within a story: %d stories, want the second half's %d", len(got), len(want))
	}
	if third := h.steal(d); third != nil {
		t.Error("stolen from a second half that is done")
	}
}
