package prd

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// FuzzParse checks that Parse never panics, and that whatever it accepts,
// Marshal turns into a file that parses to the same stories and marshals to
// itself.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{canonical, messy, typeErrors, typeErrorsFixed, `{"userStories":[]}`, "{",
		`{"userStories":[{"id":"A","title":"t","answers":[{"question":"q","answer":"a","by":1},{}]}]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "prd.json")
		if err != nil {
			if file != nil {
				t.Fatalf("Parse returned a file with error %v", err)
			}
			return
		}
		out, err := file.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := Parse(out, "prd.json")
		if err != nil {
			t.Fatalf("Parse of Marshal's output: %v\n%s", err, out)
		}
		if len(again.Stories) != len(file.Stories) {
			t.Fatalf("got %d stories after a round trip, want %d", len(again.Stories), len(file.Stories))
		}
		for i, s := range file.Stories {
			if got, want := exported(again.Stories[i]), exported(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("story %d after a round trip:\ngot  %+v\nwant %+v", i, got, want)
			}
		}
		out2, err := again.Marshal()
		if err != nil {
			t.Fatalf("second Marshal: %v", err)
		}
		if string(out2) != string(out) {
			t.Fatalf("second Marshal differs:\n%s\nfirst:\n%s", out2, out)
		}
	})
}

// FuzzRemember checks what Parse remembers against what it would parse: a
// file read again, or read back after Save, must be the same File as a
// fresh parse of the same text gives, and must share nothing with the one
// handed out before it.
func FuzzRemember(f *testing.F) {
	for _, seed := range []string{canonical, messy, typeErrorsFixed,
		`{"userStories":[{"id":"A","title":"t","answers":[{"question":"q","answer":"a","by":1},{}]}]}`,
		`{"project":"p","userStories":[{"id":"A","title":"t"},{"id":"B","title":"u","dependsOn":["A"],"checks":["true"]}],"x":[1]}`} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, pick uint8) {
		forget()
		file, err := Parse(data, "prd.json")
		if err != nil {
			return
		}
		// Read again, twice, whatever the callers did to the copies
		// before.
		mess(file)
		again, err := Parse(data, "prd.json")
		if err != nil {
			t.Fatalf("Parse of the same text again: %v", err)
		}
		mess(again)
		if again, err = Parse(data, "prd.json"); err != nil {
			t.Fatalf("Parse of the same text a third time: %v", err)
		}
		forget()
		fresh, _ := Parse(data, "prd.json")
		sameFile(t, "read again", again, fresh)

		// Read back after Save, with one story changed.
		s := again.Stories[int(pick)%len(again.Stories)]
		s.Attempts++
		s.Notes += " (noted)"
		path := filepath.Join(t.TempDir(), "prd.json")
		if err := again.Save(path); err != nil {
			t.Fatalf("Save: %v", err)
		}
		saved, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		back, backErr := Parse(saved, "prd.json")
		forget()
		fresh, freshErr := Parse(saved, "prd.json")
		if (backErr == nil) != (freshErr == nil) {
			t.Fatalf("Parse after Save: %v; a fresh parse: %v", backErr, freshErr)
		}
		if freshErr != nil {
			return
		}
		sameFile(t, "read back after Save", back, fresh)
	})
}

// forget makes the next Parse a fresh one.
func forget() {
	last.Lock()
	last.memo = nil
	last.Unlock()
}

// mess changes everything a caller can change in f.
func mess(f *File) {
	f.Project += "!"
	for _, s := range f.Stories {
		s.Title += "!"
		s.Passes = !s.Passes
		for _, ss := range [][]string{s.AcceptanceCriteria, s.Checks, s.DependsOn} {
			for i := range ss {
				ss[i] += "!"
			}
		}
		for i := range s.Answers {
			s.Answers[i].Answer += "!"
		}
	}
	f.Stories = append(f.Stories[:0], f.Stories[len(f.Stories)-1])
}

// sameFile fails unless got and want hold the same values, marshal to the
// same text, and still do after the same change to both.
func sameFile(t *testing.T, what string, got, want *File) {
	t.Helper()
	if got.Project != want.Project || got.BranchName != want.BranchName || got.Description != want.Description {
		t.Fatalf("%s: header %q %q %q, want %q %q %q", what, got.Project, got.BranchName, got.Description,
			want.Project, want.BranchName, want.Description)
	}
	if len(got.Stories) != len(want.Stories) {
		t.Fatalf("%s: %d stories, want %d", what, len(got.Stories), len(want.Stories))
	}
	for i, s := range want.Stories {
		if g, w := exported(got.Stories[i]), exported(s); !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: story %d:\ngot  %+v\nwant %+v", what, i, g, w)
		}
		if got.Story(s.ID) != got.Stories[slices.IndexFunc(got.Stories, func(x *Story) bool { return x.ID == s.ID })] {
			t.Fatalf("%s: Story(%q) is not the first story with that id", what, s.ID)
		}
	}
	for _, f := range []*File{got, want} {
		f.Stories[0].Passes = !f.Stories[0].Passes
		f.Description += "."
	}
	g, _ := got.Marshal()
	w, _ := want.Marshal()
	if string(g) != string(w) {
		t.Fatalf("%s: Marshal after a change:\n%s\nwant:\n%s", what, g, w)
	}
}
