package prd

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/ralph-harness/ralph/bench/fixture"
	"github.com/ralph-harness/ralph/internal/huge"
)

// everyField is a file whose only story has every field, one with escapes.
const everyField = `{
  "userStories": [
    {
      "id": "A",
      "title": "Title \"quoted\"",
      "description": "d",
      "acceptanceCriteria": [
        "c1",
        "c2"
      ],
      "priority": 2,
      "notes": "n",
      "checks": [
        "true"
      ],
      "dependsOn": [
        "B"
      ],
      "passes": false,
      "attempts": 1,
      "blocked": "q",
      "failed": "f",
      "answers": [
        {
          "question": "q0",
          "answer": "a0"
        }
      ]
    },
    {
      "id": "B",
      "title": "b"
    }
  ]
}
`

// TestUnchangedSeesEveryField changes each exported field of a story in
// turn, by assignment and, for slices, in place: the story must no longer
// count as unchanged, or Save would write its old text.
func TestUnchangedSeesEveryField(t *testing.T) {
	typ := reflect.TypeFor[Story]()
	for i := range typ.NumField() {
		sf := typ.Field(i)
		if !sf.IsExported() {
			continue
		}
		for _, inPlace := range []bool{false, true} {
			f, err := parse([]byte(everyField), "prd.json", false)
			if err != nil {
				t.Fatal(err)
			}
			s := f.Stories[0]
			if !s.unchanged() {
				t.Fatalf("%s: the story as parsed counts as changed", sf.Name)
			}
			v := reflect.ValueOf(s).Elem().Field(i)
			if !alter(v, inPlace) {
				continue
			}
			if s.unchanged() {
				t.Errorf("%s changed (in place: %v): the story still counts as unchanged", sf.Name, inPlace)
			}
			if out := mustMarshal(t, f); out == everyField {
				t.Errorf("%s changed (in place: %v): Marshal wrote the old text", sf.Name, inPlace)
			}
		}
	}
}

// alter changes the value v: by assignment, or the first element of a
// slice in place. It reports whether it could.
func alter(v reflect.Value, inPlace bool) bool {
	if inPlace {
		if v.Kind() != reflect.Slice || v.Len() == 0 {
			return false
		}
		v = v.Index(0)
		if v.Kind() == reflect.Struct { // an Answer
			v = v.Field(1)
		}
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "!")
	case reflect.Int:
		v.SetInt(v.Int() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
	default:
		panic("alter: a field of kind " + v.Kind().String())
	}
	return true
}

// TestUnchangedByValue checks that a story whose fields were changed and
// then set back, to equal strings held elsewhere, is written as its text.
func TestUnchangedByValue(t *testing.T) {
	f, err := parse([]byte(everyField), "prd.json", false)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Stories[0]
	title, desc := s.Title, s.Description
	s.Title, s.Description = "other", "other"
	if s.unchanged() {
		t.Fatal("a changed story counts as unchanged")
	}
	// The title has an escape, so it was summed by value: set back, the
	// story is unchanged. The description lies in the text, and an equal
	// copy of it counts as a change, which Marshal writes as before.
	s.Title = strings.Clone(title)
	s.Description = strings.Clone(desc)
	if got := mustMarshal(t, f); got != everyField {
		t.Errorf("Marshal:\n%s\nwant:\n%s", got, everyField)
	}
	s.Description = desc
	if !s.unchanged() {
		t.Error("a story set back as it was counts as changed")
	}
}

// TestReadOnce checks that after ReadOnce, Parse and Save remember nothing
// and write what they wrote with a memo.
func TestReadOnce(t *testing.T) {
	dir := t.TempDir()
	save := func(name string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(everyField), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		s := f.Stories[0]
		s.Attempts, s.Title = 5, "T"
		f.Stories[1].Notes = "note"
		if err := f.Save(path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	want := save("memo.json")
	forget()
	ReadOnce()
	t.Cleanup(func() { readOnce.Store(false) })
	if got := save("once.json"); got != want {
		t.Errorf("saved after ReadOnce:\n%s\nwant:\n%s", got, want)
	}
	if last.Load() != nil {
		t.Error("Parse or Save remembered a text after ReadOnce")
	}
	f := mustParse(t, everyField)
	if f.Stories[0].orig != nil {
		t.Error("a story parsed after ReadOnce has a copy as parsed")
	}
}

// TestReadOnceLong: after ReadOnce, a long list of stories, cut from huge
// pages (see storyBlock), decodes as it does without.
func TestReadOnceLong(t *testing.T) {
	data := fixture.PRD(10_000, 5_000)
	want, err := parse(data, "prd.json", false)
	if err != nil {
		t.Fatal(err)
	}
	ReadOnce()
	t.Cleanup(func() { readOnce.Store(false) })
	f, err := Parse(data, "prd.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Stories) != len(want.Stories) {
		t.Fatalf("%d stories, want %d", len(f.Stories), len(want.Stories))
	}
	for i, s := range f.Stories {
		if got, w := exported(s), exported(want.Stories[i]); !reflect.DeepEqual(got, w) {
			t.Fatalf("story %d: %+v, want %+v", i, got, w)
		}
	}
	if text, err := f.Marshal(); err != nil || !bytes.Equal(text, data) {
		t.Errorf("Marshal: %v, and the text differs from the file's", err)
	}
}

// TestStoryBlock: stories are cut from blocks that grow with the list;
// after ReadOnce, the rest of a long list comes from huge pages, as many
// stories as it should need.
func TestStoryBlock(t *testing.T) {
	const each = 500 // bytes of text a story
	for _, c := range []struct{ n, want int }{{0, 16}, {16, 16}, {100, 100}, {5000, 1024}} {
		if got := len(storyBlock(c.n, c.n*each, 100_000*each)); got != c.want {
			t.Errorf("a block after %d stories: %d stories, want %d", c.n, got, c.want)
		}
	}
	ReadOnce()
	t.Cleanup(func() { readOnce.Store(false) })
	for _, rest := range []int{pageOfStories / 2, 3 * pageOfStories} {
		b := storyBlock(16, 16*each, rest*each)
		if len(b) != cap(b) || len(b) < max(rest, pageOfStories) {
			t.Errorf("after ReadOnce, a block for %d more stories: len %d, cap %d", rest, len(b), cap(b))
		}
		if off := uintptr(unsafe.Pointer(&b[0])) % huge.Page; off >= uintptr(storySize) {
			t.Errorf("after ReadOnce, a block for %d more stories starts %d bytes past a huge page", rest, off)
		}
	}
	if got := len(storyBlock(16, 16*each, (pageOfStories/2-1)*each)); got != 16 {
		t.Errorf("after ReadOnce, a block for fewer than half a huge page of stories: %d stories, want 16", got)
	}
}
