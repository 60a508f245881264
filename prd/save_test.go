package prd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte(canonical), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	f.Story("US-002").Passes = true
	if err := f.Save(path); err != nil {
		t.Fatalf("Save: %v", err)
	}
	g, err := Load(path)
	if err != nil {
		t.Fatalf("Load after Save: %v", err)
	}
	for _, s := range f.Stories {
		if got, want := g.Story(s.ID).Status(), s.Status(); got != want {
			t.Errorf("%s: status after Save and Load: got %+v, want %+v", s.ID, got, want)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode after Save: got %v, want %v", got, os.FileMode(0o600))
	}
}

// TestSaveFailureKeepsOld makes the write fail for real, without a seam that
// root could ignore: the file's name is legal, but the temp file's name, which
// is longer, exceeds the 255-byte limit, so the temp file cannot be created.
func TestSaveFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("p", 250)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(canonical), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	f.Story("US-001").Passes = true
	err = f.Save(path)
	if err == nil {
		t.Fatal("Save succeeded, want an error")
	}
	if want := "write " + path + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != canonical {
		t.Errorf("file after a failed Save:\n%s\nwant it unchanged:\n%s", got, canonical)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{name}; !slices.Equal(names, want) {
		t.Errorf("directory holds %q, want only the file", names)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "missing.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file: got %v, want an error wrapping fs.ErrNotExist", err)
	}

	path := filepath.Join(dir, "prd.json")
	if err := os.WriteFile(path, []byte("{\n  \"userStories\": [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if want := path + ":3:1: unexpected end of JSON input"; err == nil || err.Error() != want {
		t.Errorf("Load of a torn file: got %v, want %q", err, want)
	}
}

// TestSaveKeepsNoOutput: what Parse remembers of a saved text keeps no
// story in Marshal's own buffer, which holds the layout between every
// story: in a loop that changes one story an iteration, each story changed
// once would otherwise keep a whole output of the file alive.
func TestSaveKeepsNoOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte(canonical), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Stories[i%len(f.Stories)].Attempts += 7
		if err := f.Save(path); err != nil {
			t.Fatal(err)
		}
		m := last.Load()
		if m == nil {
			t.Fatal("Save remembered nothing")
		}
		for j, ms := range m.stories {
			if within(ms.raw, m.buf) {
				t.Errorf("save %d: story %d is remembered in Marshal's buffer", i, j)
			}
		}
	}
}

// within reports whether a lies in the memory of b.
func within(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return lo <= p && p < lo+uintptr(len(b))
}

// TestSaveKnowsValid: a text saved after changes that validation does not
// look at (a status) is known to validate, and is not validated again when
// it is read back; any other change leaves it to be validated, as a parse
// would, whatever its stories' history.
func TestSaveKnowsValid(t *testing.T) {
	const text = `{"project": "p", "userStories": [{"id": "A", "title": "a"}, {"id": "B", "title": "b", "dependsOn": ["A"], "checks": ["true"]}]}`
	for _, c := range []struct {
		name   string
		change func(f, other *File)
		known  bool
	}{
		{"status", func(f, _ *File) { f.Stories[1].Attempts++; f.Stories[0].Passes = true; f.Stories[1].Blocked = "?" }, true},
		{"answers and notes", func(f, _ *File) { f.Stories[0].Answers = []Answer{{"q", "a"}}; f.Stories[1].Notes = "n" }, true},
		{"nothing", func(f, _ *File) {}, true},
		{"id", func(f, _ *File) { f.Stories[0].ID = "C" }, false},
		{"title", func(f, _ *File) { f.Stories[0].Title = "" }, false},
		{"attempts below zero", func(f, _ *File) { f.Stories[0].Attempts = -1 }, false},
		{"checks", func(f, _ *File) { f.Stories[1].Checks[0] = "" }, false},
		{"dependencies", func(f, _ *File) { f.Stories[1].DependsOn = []string{"B"} }, false},
		{"project", func(f, _ *File) { f.Project = "\x1b" }, false},
		{"story added", func(f, _ *File) { f.AddStory(Story{ID: "C", Title: "c"}) }, false},
		{"stories swapped", func(f, _ *File) { f.Stories[0], f.Stories[1] = f.Stories[1], f.Stories[0] }, false},
		{"story of another parse", func(f, other *File) { f.Stories[1] = other.Stories[1] }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "prd.json")
			// A file whose second story, B, depends on a story f lacks.
			other := mustParse(t, strings.ReplaceAll(text, `"A"`, `"X"`))
			f := mustParse(t, text)
			c.change(f, other)
			if err := f.Save(path); err != nil {
				t.Fatal(err)
			}
			if known := last.Load().ids != nil; known != c.known {
				t.Errorf("the saved text is known to validate: %v, want %v", known, c.known)
			}
			saved, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, gerr := Parse(saved, "prd.json")
			_, werr := parse(saved, "prd.json", false)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Errorf("Parse of the saved text: %v; parsing it afresh: %v", gerr, werr)
			}
		})
	}
}
