package prd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/bench/fixture"
)

// jsonSeeds are texts for the tests that compare the fast scanner and
// indenter with encoding/json: valid and invalid, canonical and not.
var jsonSeeds = []string{
	canonical, messy, typeErrors, typeErrorsFixed, string(fixture.PRD(5, 2)),
	`{}`, `[]`, `{ }`, `[ ]`, `[[]]`, "[\n  []\n]", `{"a":{}}`, `"x"`, `0`, `-0.5e+3`, `01`, `1.`, `1e`, `-`,
	`true`, `tru`, `nul`, `[1,]`, `{"a":1,}`, `{"a" : 1}`, "{\n  \"a\": 1\n}", "{\n  \"a\": 1\n}\n",
	"{\n\t\"a\": 1\n}", `"\u00e9\"\\\/\b\f\n\r\t"`, `"\x"`, `"\u12"`, "\"\x01\"", "\"\xff\"",
	`["\\"]`, `["\\\"]"]`, `[1 2]`, `{"a"}`, `{1:2}`, ` {"a": [1, 2, {"b": null}]} `,
	strings.Repeat("[", 300) + strings.Repeat("]", 300),
}

// FuzzScan checks the decoder's syntax checks against json.Valid and
// json.Indent: they accept only valid text, all of it but the very deep,
// find where each value ends, and call text canonical only when
// json.Indent would leave it as it is.
func FuzzScan(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end, canon, ok := scan(data)
		valid := json.Valid(data)
		switch {
		case ok && !valid:
			t.Fatalf("scan accepts %q, which is not valid JSON", data)
		case !ok && valid && !deep(data):
			t.Fatalf("scan turns down valid JSON %q", data)
		case !ok:
			return
		}
		if start := skipSpace(data, 0); end != valueEnd(data, start) {
			t.Fatalf("value at %d of %q: end %d, want %d", start, data, end, valueEnd(data, start))
		}
		if canon {
			var out bytes.Buffer
			if err := json.Indent(&out, data, "", "  "); err != nil {
				t.Fatal(err)
			}
			// json.Indent keeps trailing space as it is.
			if !bytes.Equal(out.Bytes(), data) {
				t.Fatalf("scan calls %q canonical, json.Indent makes it %q", data, out.Bytes())
			}
		}
	})
}

// scan checks data as the decoder checks a value of any type, and returns
// where the value ends, whether its layout is Marshal's, and whether data
// is that value alone, with white space around it.
func scan(data []byte) (end int, canonical, ok bool) {
	d := &decoder{text: text{data: data, src: string(data)}}
	i := skipSpace(data, 0)
	if i == len(data) {
		return 0, false, false
	}
	d.canonical = i == 0
	end = d.skip(i, 0)
	return end, d.canonical, end >= 0 && skipSpace(data, end) == len(data)
}

// FuzzParseSyntax checks that Parse calls text bad JSON exactly when
// encoding/json does, with the error encoding/json words, whatever else is
// wrong with it.
func FuzzParseSyntax(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"userStories":[{"id":"A","title":"t","answers":[{"question":"q","answer":"a","by":1},{}]}]}`,
		`{"userStories":[{"id":"A","title":"t","priority":1,"passes":true,"failed":false,"checks":["x"]}]}`,
		`{"userStories":[{"id":"A","title":"t","priority":1e5,"passes":tru}]}`,
		`{"userStories":[{"id":"A","title":"t","dependsOn":["B",]},{"id":"B","title":"u"}]}`,
		`{"userStories":[{"id":"A","title":"t","answers":[{"question":"q" "answer":"a"}]}]}`,
		`{"project":{"a":[1,{"b":null}]},"userStories":[{"id":"A","title":"t","x":{"y":[]}}]}`,
		"\ufeff{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		forget()
		_, err := Parse(data, "prd.json")
		var serr *json.SyntaxError
		bom := err != nil && strings.Contains(err.Error(), "byte order mark")
		bad := errors.As(err, &serr) || bom
		if valid := json.Valid(data); bad == valid {
			t.Fatalf("json.Valid(%q) = %v, but Parse says %v", data, valid, err)
		}
		if !bad || bom {
			return
		}
		var raw json.RawMessage
		if want := json.Unmarshal(data, &raw); !strings.HasSuffix(err.Error(), ": "+want.Error()) {
			t.Fatalf("Parse(%q): %v, want encoding/json's %v", data, err, want)
		}
	})
}

// deep reports whether data nests deeper than scan checks.
func deep(data []byte) bool {
	return bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) >= maxScanDepth
}

// FuzzAppendIndent checks that appendIndent indents as json.Indent does.
func FuzzAppendIndent(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, depth uint8) {
		if !json.Valid(data) {
			return
		}
		data = bytes.TrimLeft(data, " \t\r\n")
		data = bytes.TrimRight(data, " \t\r\n")
		var want bytes.Buffer
		if err := json.Indent(&want, data, strings.Repeat("  ", int(depth%8)), "  "); err != nil {
			t.Fatal(err)
		}
		if got := appendIndent(nil, data, int(depth%8)); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendIndent(%q, %d) = %q, want %q", data, depth%8, got, want.Bytes())
		}
	})
}

// FuzzMarshalSame checks that Marshal writes what it wrote before it was
// made fast (refMarshal), whatever the text and whichever stories change.
func FuzzMarshalSame(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s), []byte{0, 1, 2})
	}
	f.Fuzz(func(t *testing.T, data, changes []byte) {
		// Parse remembers the stories as parsed, which Marshal then
		// compares with; parse alone does not, as after ReadOnce, when
		// Marshal also notes the stories in runs (see note).
		alone := func(data []byte, name string) (*File, error) { return parse(data, name, false) }
		for _, c := range []struct {
			read     func([]byte, string) (*File, error)
			readOnce bool
		}{{Parse, false}, {alone, false}, {alone, true}} {
			file, err := c.read(data, "prd.json")
			if err != nil {
				return
			}
			change(file, changes)
			readOnce.Store(c.readOnce)
			got, err := file.Marshal()
			readOnce.Store(false)
			if err != nil {
				t.Fatal(err)
			}
			want, err := file.refMarshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Marshal of %q after %v:\n%s\nbefore it was made fast:\n%s", data, changes, got, want)
			}
		}
	})
}

// TestParseRemembers checks that parsing the same text again gives a File
// as new, however the first one was changed meanwhile.
func TestParseRemembers(t *testing.T) {
	data := []byte(canonical)
	first := mustParse(t, string(data))
	want := mustMarshal(t, first)
	s := first.Stories[0]
	s.Passes, s.Attempts, s.Title = true, 9, "changed"
	s.AcceptanceCriteria[0] = "changed in place"
	s.AcceptanceCriteria = append(s.AcceptanceCriteria, "more")
	first.Stories[1].DependsOn[0] = "changed in place"
	first.Stories = first.Stories[:1]
	first.Project = "changed"
	data[10] = 'X' // the caller's bytes, changed after the parse

	again := mustParse(t, canonical)
	fresh, err := parse([]byte(canonical), "prd.json", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Stories) != len(fresh.Stories) || again.Project != fresh.Project {
		t.Fatalf("second parse has %d stories, project %q; want %d, %q", len(again.Stories), again.Project, len(fresh.Stories), fresh.Project)
	}
	for i := range fresh.Stories {
		if got, want := exported(again.Stories[i]), exported(fresh.Stories[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("story %d of the second parse:\ngot  %+v\nwant %+v", i, got, want)
		}
	}
	if got := mustMarshal(t, again); got != want {
		t.Errorf("second parse marshals to:\n%s\nwant:\n%s", got, want)
	}
}

// FuzzSaveRemembers checks that what Save tells Parse about the text it
// wrote is what parsing that text gives: the same stories, the same header,
// and the same output of Marshal after further changes.
func FuzzSaveRemembers(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s), []byte{0, 1, 2}, []byte{3})
	}
	f.Fuzz(func(t *testing.T, data, changes, more []byte) {
		file, err := Parse(data, "prd.json")
		if err != nil {
			return
		}
		// What the loop reads back the saved file with: the stories of
		// its last read, unchanged, taken over (see ParseReusing).
		base, err := Parse(data, "prd.json")
		if err != nil {
			t.Fatalf("Parse of the same text again: %v", err)
		}
		change(file, changes)
		path := filepath.Join(t.TempDir(), "prd.json")
		if err := file.Save(path); err != nil {
			t.Fatal(err)
		}
		saved, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, werr := parse(saved, "prd.json", false)
		got, gerr := Parse(saved, "prd.json")
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("Parse of the saved file: %v; parsing it afresh: %v", gerr, werr)
		}
		if werr != nil {
			return
		}
		if got.Project != want.Project || got.BranchName != want.BranchName || got.Description != want.Description {
			t.Fatalf("header %q %q %q, want %q %q %q", got.Project, got.BranchName, got.Description, want.Project, want.BranchName, want.Description)
		}
		if len(got.Stories) != len(want.Stories) {
			t.Fatalf("%d stories, want %d", len(got.Stories), len(want.Stories))
		}
		for i := range want.Stories {
			g, w := got.Stories[i], want.Stories[i]
			if !reflect.DeepEqual(exported(g), exported(w)) || !bytes.Equal(g.raw, w.raw) || g.canonical != w.canonical {
				t.Fatalf("story %d:\ngot  %+v (%q, %v)\nwant %+v (%q, %v)", i, exported(g), g.raw, g.canonical, exported(w), w.raw, w.canonical)
			}
			sameStory(t, got, want, w.ID)
		}
		reused, err := ParseReusing(saved, "prd.json", base)
		if err != nil {
			t.Fatalf("ParseReusing of the saved file: %v", err)
		}
		if len(reused.Stories) != len(want.Stories) || reused.Project != want.Project {
			t.Fatalf("ParseReusing: %d stories, project %q; want %d, %q", len(reused.Stories), reused.Project, len(want.Stories), want.Project)
		}
		for i := range want.Stories {
			g, w := reused.Stories[i], want.Stories[i]
			if !reflect.DeepEqual(exported(g), exported(w)) || !bytes.Equal(g.raw, w.raw) || g.canonical != w.canonical {
				t.Fatalf("ParseReusing, story %d:\ngot  %+v (%q, %v)\nwant %+v (%q, %v)", i, exported(g), g.raw, g.canonical, exported(w), w.raw, w.canonical)
			}
		}
		change(got, more)
		change(reused, more)
		change(want, more)
		if g, w := mustMarshal(t, got), mustMarshal(t, want); g != w {
			t.Fatalf("after more changes, Marshal gives:\n%s\nwant:\n%s", g, w)
		}
		if g, w := mustMarshal(t, reused), mustMarshal(t, want); g != w {
			t.Fatalf("after more changes, Marshal of what ParseReusing gave:\n%s\nwant:\n%s", g, w)
		}
	})
}

// change applies changes chosen by the bytes of c to f.
func change(f *File, c []byte) {
	for i, b := range c {
		if len(f.Stories) == 0 {
			return
		}
		s := f.Stories[int(b)%len(f.Stories)]
		switch (int(b) + i) % 11 {
		case 0:
			s.Passes = !s.Passes
		case 1:
			s.Attempts++
		case 2:
			s.Blocked = "why <not> & \"so\"?"
		case 3:
			s.Title += " 2"
		case 4:
			s.AcceptanceCriteria = append(s.AcceptanceCriteria, "more")
		case 5:
			f.Project = "changed"
		case 6:
			f.AddStory(Story{ID: fmt.Sprintf("NEW-%d", i), Title: "new", DependsOn: []string{s.ID}})
		case 7:
			s.DependsOn = nil
		case 8:
			s.Priority, s.HasPriority = 0, false
		case 9:
			if len(s.AcceptanceCriteria) > 0 {
				s.AcceptanceCriteria[0] += " changed in place"
			}
		case 10:
			// The same value, held elsewhere.
			s.Title, s.ID = strings.Clone(s.Title), strings.Clone(s.ID)
		}
	}
}

// TestParseKeeps checks that what Parse keeps of a text is as parsed,
// however the caller changed what it got.
func TestParseKeeps(t *testing.T) {
	const text = `{"userStories": [{"id": "A", "title": "a", "dependsOn": []}, {"id": "B", "title": "b"}]}`
	for _, c := range []struct {
		name   string
		change func(f *File)
	}{
		{"empty list made nil", func(f *File) { f.Stories[0].DependsOn = nil }},
		{"story replaced", func(f *File) { f.Stories[1] = &Story{ID: "B", Title: "other"} }},
		{"status", func(f *File) { f.Stories[1].Attempts = 3 }},
		{"criterion changed in place", func(f *File) { f.Stories[0].DependsOn = append(f.Stories[0].DependsOn, "B") }},
	} {
		mustParse(t, text+" ") // another text first
		c.change(mustParse(t, text))
		c.change(mustParse(t, text))
		got := mustParse(t, text)
		fresh, err := parse([]byte(text), "prd.json", false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range fresh.Stories {
			if !reflect.DeepEqual(exported(got.Stories[i]), exported(fresh.Stories[i])) {
				t.Errorf("%s: story %d is %+v, want %+v", c.name, i, exported(got.Stories[i]), exported(fresh.Stories[i]))
			}
		}
	}
}

// sameStory fails unless Story(id) finds the story at the same place in
// got as in want: the index of ids that a validated file keeps must match
// its stories.
func sameStory(t *testing.T, got, want *File, id string) {
	t.Helper()
	if g, w := slices.Index(got.Stories, got.Story(id)), slices.Index(want.Stories, want.Story(id)); g != w {
		t.Fatalf("Story(%q) is story %d, want %d", id, g, w)
	}
}

// TestSaveRemembersDeep: a story saved changed is decoded again from its
// text when next asked for, whatever its members nest: an answer holding
// a value nested deeper than the decoder checks itself keeps its question
// and answer, as a fresh parse of the file says.
func TestSaveRemembersDeep(t *testing.T) {
	deep := strings.Repeat("[", maxScanDepth+10) + strings.Repeat("]", maxScanDepth+10)
	data := []byte(`{"userStories": [{"id": "A", "title": "a", "answers": [{"question": "q0", "answer": "a0", "x": ` + deep + `}]}]}`)
	file, err := Parse(data, "prd.json")
	if err != nil {
		t.Fatal(err)
	}
	file.Stories[0].Attempts++
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := file.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Answer{{Question: "q0", Answer: "a0"}}
	if a := got.Stories[0].Answers; !reflect.DeepEqual(a, want) {
		t.Errorf("answers read back after a save: %+v, want %+v", a, want)
	}
}
