package prd

import (
	"reflect"
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
// file read again must be the same File as a fresh parse of the same text
// gives, whatever the callers did to the copies handed out before.
// FuzzSaveRemembers does the same for a file read back after Save.
func FuzzRemember(f *testing.F) {
	for _, seed := range []string{canonical, messy, typeErrorsFixed,
		`{"userStories":[{"id":"A","title":"t","answers":[{"question":"q","answer":"a","by":1},{}]}]}`,
		`{"project":"p","userStories":[{"id":"A","title":"t"},{"id":"B","title":"u","dependsOn":["A"],"checks":["true"]}],"x":[1]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		forget()
		file, err := Parse(data, "prd.json")
		if err != nil {
			return
		}
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
		if again.Project != fresh.Project || again.BranchName != fresh.BranchName || again.Description != fresh.Description {
			t.Fatalf("header %q %q %q, want %q %q %q", again.Project, again.BranchName, again.Description,
				fresh.Project, fresh.BranchName, fresh.Description)
		}
		if len(again.Stories) != len(fresh.Stories) {
			t.Fatalf("%d stories, want %d", len(again.Stories), len(fresh.Stories))
		}
		for i, s := range fresh.Stories {
			if g, w := exported(again.Stories[i]), exported(s); !reflect.DeepEqual(g, w) {
				t.Fatalf("story %d:\ngot  %+v\nwant %+v", i, g, w)
			}
			sameStory(t, again, fresh, s.ID)
		}
		if g, w := mustMarshal(t, again), mustMarshal(t, fresh); g != w {
			t.Fatalf("Marshal:\n%s\nwant:\n%s", g, w)
		}
	})
}

// forget makes the next Parse a fresh one.
func forget() {
	last.Store(nil)
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
	if len(f.Stories) > 0 {
		f.Stories = append(f.Stories[:0], f.Stories[len(f.Stories)-1])
	}
}
