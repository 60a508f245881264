package prd

import (
	"errors"
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
