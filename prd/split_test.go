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

// parseWith parses data with lists of stories cut into chunks from min
// bytes on, on two CPUs, and says what came of it: the error, or the
// stories, whether the text was laid out as Marshal writes it, and
// Marshal's output. Which goroutine decodes which chunk depends on the
// timing; with late, the second starts only once the first has decoded a
// chunk, and the first decodes more of them. Whatever the timing, the
// result must be the same.
func parseWith(t *testing.T, min int, late bool, data []byte) string {
	t.Helper()
	defer func(n int, l bool) { splitMin, lateSecond = n, l }(splitMin, lateSecond)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	splitMin, lateSecond = min, late
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

// listStart returns the decoder of data's list of stories, and where its
// first element begins.
func listStart(data []byte) (*decoder, int) {
	d := &decoder{text: newText(data), name: "prd.json", blocks: true, path: []step{{key: "userStories"}}}
	j := bytes.Index(data, []byte(`"userStories": [`)) + len(`"userStories": [`)
	return d, skipSpace(data, j)
}

// chunksOf returns the chunks the decoder of data, on two CPUs, cuts its
// list of stories into; fewer than two when it decodes it alone.
func chunksOf(data []byte) []chunk {
	d, j := listStart(data)
	return d.chunks(j, 2*chunksPerCPU)
}

// TestParseSplit decodes long lists of stories in chunks, on two CPUs at
// once, and checks that what comes of it, a file or the errors, is what
// one decoder alone makes of the same text, where chunks meet too.
func TestParseSplit(t *testing.T) {
	big := fixture.PRD(2000, 1000) // 1 MB, as Marshal writes it
	if len(big) < 2*splitMin {
		t.Fatalf("the fixture is too short to cut into chunks: %d bytes", len(big))
	}
	cs := chunksOf(big)
	if len(cs) != 2*chunksPerCPU {
		t.Fatalf("the fixture's list of stories is cut into %d chunks, want %d", len(cs), 2*chunksPerCPU)
	}
	for i, c := range cs[:len(cs)-1] {
		if !bytes.HasPrefix(big[c.limit-1:], []byte("},\n    {")) || cs[i+1].start != c.limit+len(",\n    ") {
			t.Fatalf("chunk %d ends at %d, the next begins at %d: %q", i, c.limit, cs[i+1].start, big[c.limit-20:c.limit+20])
		}
	}
	at := cs[0].limit
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
	// answered has, in the story the first chunk ends with, answers laid
	// out as stories are: what looks like the end of a story is inside
	// it, where the first chunk is to end.
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
		name    string
		data    []byte
		chunked bool // the list is cut into chunks, at stories' ends or not
	}{
		{"as Marshal writes it", big, true},
		{"a type error in the last chunk", edit(big, last, `"priority": 1990`, `"priority": "high"`), true},
		{"a type error in the first chunk", edit(big, fixture.StoryID(10), `"priority": 10`, `"priority": "high"`), true},
		{"a type error in the first chunk and the last", edit(edit(big, last, `"title": `, `"title": 1, "x": `), fixture.StoryID(3), `"passes": `, `"passes": "no", "y": `), true},
		{"a syntax error in the last chunk", edit(big, last, `"priority": 1990`, `"priority": 1990,`), true},
		{"a syntax error in a middle chunk", edit(big, fixture.StoryID(1000), `"priority": 1000`, `"priority": 1000,`), true},
		{"not an object in the last chunk", edit(big, last, `{`, `[1], {`), true},
		{"a story's own problem in the last chunk", edit(big, last, `"title": "`, `"title": "\u001b`), true},
		{"a story's own problem in the first chunk", edit(big, fixture.StoryID(10), `"title": "`, `"title": "\u001b`), true},
		{"the same id in two chunks", edit(big, last, `"id": "`+last+`"`, `"id": "US-00002"`), true},
		{"a dependency on a story of another chunk", edit(big, fixture.StoryID(2), `"title"`, `"dependsOn": ["`+last+`"], "title"`), true},
		{"a dependency cycle across chunks", edit(edit(big, fixture.StoryID(2), `"title"`, `"dependsOn": ["`+last+`"], "title"`), last, `"title"`, `"dependsOn": ["US-00002"], "title"`), true},
		{"laid out with tabs", indented.Bytes(), false},
		{"laid out otherwise in the last chunk", edit(big, last, `"priority": 1990`, `"priority":  1990`), true},
		{"the separator inside a story", answered, true},
		{"the separator after the list", trailing.Bytes(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(chunksOf(tt.data)) > 1; got != tt.chunked {
				t.Fatalf("cut into chunks: %v, want %v", got, tt.chunked)
			}
			alone := parseWith(t, math.MaxInt, false, tt.data)
			if got := parseWith(t, splitMin, false, tt.data); got != alone {
				t.Errorf("in chunks:\n%.2000s\nalone:\n%.2000s", got, alone)
			}
			if got := parseWith(t, splitMin, true, tt.data); got != alone {
				t.Errorf("in chunks, the second CPU late:\n%.2000s\nalone:\n%.2000s", got, alone)
			}
		})
	}
}

// FuzzSplit checks that a list of stories decoded in chunks, cut wherever
// the text allows, comes out as one decoder alone makes of it.
func FuzzSplit(f *testing.F) {
	for _, seed := range []string{canonical, messy, typeErrors, string(fixture.PRD(5, 2)),
		"{\n  \"userStories\": [\n    {\n      \"id\": \"A\"\n    },\n    {\n      \"id\": 1\n    },\n    {\n      \"id\": \"A\"\n    }\n  ]\n}\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		alone := parseWith(t, math.MaxInt, false, data)
		if got := parseWith(t, 0, false, data); got != alone {
			t.Fatalf("in chunks:\n%s\nalone:\n%s", got, alone)
		}
		if got := parseWith(t, 0, true, data); got != alone {
			t.Fatalf("in chunks, the second CPU late:\n%s\nalone:\n%s", got, alone)
		}
	})
}

// TestChunks: a chunk's decoder stops at the story that ends at its limit,
// and fails on a limit that is no story's end; the chunks decoded one after
// another hold the list's stories in order; and a chunk whose limit lies
// past the list's end fails, as the list ends before it.
func TestChunks(t *testing.T) {
	data := fixture.PRD(2000, 1000)
	ids := func(stories []*Story) []string {
		var s []string
		for _, st := range stories {
			s = append(s, st.ID)
		}
		return s
	}
	var want []string
	for i := 1; i <= 2000; i++ {
		want = append(want, fixture.StoryID(i))
	}
	d, j := listStart(data)
	depth := len(d.path)
	cs := d.chunks(j, 2*chunksPerCPU)

	// One goroutine takes every chunk, one after another.
	w := &chunkWork{d: d, depth: depth, cs: cs}
	w.decode(0, nil)
	if w.failed.Load() {
		t.Fatal("a chunk failed")
	}
	var got []string
	for i, c := range w.cs {
		if i < len(w.cs)-1 && c.end != c.limit {
			t.Errorf("chunk %d ended at %d, want at its limit %d", i, c.end, c.limit)
		}
		if len(c.stories) == 0 || len(c.d.errs) > 0 {
			t.Errorf("chunk %d: %d stories, errors %v", i, len(c.stories), c.d.errs)
		}
		got = append(got, ids(c.stories)...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the chunks hold %d stories, want the list's %d in order", len(got), len(want))
	}
	if last := w.cs[len(w.cs)-1]; last.end != bytes.LastIndex(data, []byte("]"))+1 {
		t.Errorf("the last chunk ended at %d, want just past the list", last.end)
	}

	// A limit within a story: the decoder reads past it, and fails.
	c := cs[1]
	pd := d.partDecoder()
	pd.limit = c.start + 10
	if stories, end := pd.storiesFrom(c.start, depth); end != -1 || stories != nil {
		t.Errorf("past a limit within a story: %d stories, ended at %d", len(stories), end)
	}

	// A limit past the list's end: the chunk's decoder ends at the list's
	// end, and the work fails.
	short := fixture.PRD(3, 0)
	d, j = listStart(short)
	_, next, ok := d.storyEnd(j)
	if !ok {
		t.Fatal("no story's end in the short list")
	}
	w = &chunkWork{d: d, depth: len(d.path), cs: []chunk{{start: next, limit: len(short) - 1}}}
	w.decode(0, nil)
	if !w.failed.Load() {
		t.Errorf("a chunk that ends with the list before its limit did not fail: ended at %d, limit %d", w.cs[0].end, w.cs[0].limit)
	}
}
