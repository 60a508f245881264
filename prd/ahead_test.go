package prd

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

const aheadText = `{
  "project": "p",
  "userStories": [
    {"id": "A", "title": "a", "attempts": 1},
    {"id": "B", "title": "b", "attempts": 0}
  ]
}
`

// readAhead writes aheadText to a new prd.json and reads it back.
func readAhead(t *testing.T) (string, *File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prd.json")
	if err := os.WriteFile(path, []byte(aheadText), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path, "prd.json")
	if err != nil {
		t.Fatal(err)
	}
	return path, f
}

// TestSetStatusAhead: whether the save written ahead fits or not, the
// file ends as SetStatus alone leaves it, with what changed meanwhile.
func TestSetStatusAhead(t *testing.T) {
	passed := Status{Passes: true, Attempts: 2}
	tests := []struct {
		name      string
		meanwhile func(*File) // a change made after WriteAhead, if any
		id        string
		st        Status
		want      map[string]Status
		wantErr   error
	}{
		{name: "fits", id: "A", st: passed,
			want: map[string]Status{"A": passed, "B": {}}},
		{name: "another status", id: "A", st: Status{Attempts: 2, Failed: "gave up"},
			want: map[string]Status{"A": {Attempts: 2, Failed: "gave up"}, "B": {}}},
		{name: "another story", id: "B", st: passed,
			want: map[string]Status{"A": {Attempts: 1}, "B": passed}},
		{name: "changed meanwhile", id: "A", st: passed,
			meanwhile: func(f *File) { f.Story("B").Notes = "a person's note" },
			want:      map[string]Status{"A": passed, "B": {}}},
		{name: "removed meanwhile", id: "A", st: passed,
			meanwhile: func(f *File) { f.Stories = f.Stories[1:] },
			wantErr:   ErrNoStory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, f := readAhead(t)
			a := f.WriteAhead(path, "A", passed)
			defer a.Close()
			if tt.meanwhile != nil {
				if err := Update(path, "prd.json", nil, func(f *File) error { tt.meanwhile(f); return nil }); err != nil {
					t.Fatal(err)
				}
			}
			err := SetStatus(path, "prd.json", nil, tt.id, tt.st, a)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("SetStatus: %v, want %v", err, tt.wantErr)
			}
			got, err := Read(path, "prd.json")
			if err != nil {
				t.Fatal(err)
			}
			for id, st := range tt.want {
				if s := got.Story(id); s == nil || s.Status() != st {
					t.Errorf("story %s: %+v, want the status %+v", id, s, st)
				}
			}
			if tt.meanwhile != nil && tt.wantErr == nil && got.Story("B").Notes != "a person's note" {
				t.Errorf("the change made meanwhile was lost")
			}
			// The same text as SetStatus alone writes, which the
			// memo knows, and which parses as it says.
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(t.TempDir(), "prd.json")
			if err := os.WriteFile(want, []byte(aheadText), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.meanwhile != nil {
				Update(want, "prd.json", nil, func(f *File) error { tt.meanwhile(f); return nil })
			}
			SetStatus(want, "prd.json", nil, tt.id, tt.st, nil)
			if wantData, _ := os.ReadFile(want); string(data) != string(wantData) {
				t.Errorf("prd.json:\n%s\nwant, as SetStatus alone writes it:\n%s", data, wantData)
			}
			parsed, err := parse(data, "prd.json", false)
			if err != nil {
				t.Fatal(err)
			}
			for id := range tt.want {
				if parsed.Story(id).Status() != got.Story(id).Status() {
					t.Errorf("story %s: Read says %+v, the text %+v", id, got.Story(id).Status(), parsed.Story(id).Status())
				}
			}
		})
	}
}

// TestAheadCommit: the save written ahead takes the file's place only
// while the file holds the text it was made from; once it has, closing
// it changes nothing.
func TestAheadCommit(t *testing.T) {
	path, f := readAhead(t)
	if runtime.GOOS != "linux" {
		t.Skip("only Linux makes the files without a name that a save written ahead needs")
	}
	a := f.WriteAhead(path, "A", Status{Passes: true, Attempts: 2})
	if a.commit([]byte(aheadText+" "), nil) {
		t.Fatal("committed over a text it was not made from")
	}
	if data, _ := os.ReadFile(path); string(data) != aheadText {
		t.Fatalf("prd.json changed to\n%s", data)
	}
	if !a.commit([]byte(aheadText), nil) {
		t.Fatal("not committed over the text it was made from")
	}
	a.Close()
	data := mustRead(t, path)
	// Parse knows the text, and that it validates: the loop's next read
	// of it parses nothing.
	if m := last.Load(); m == nil || !isText(data, m.text) || m.ids == nil {
		t.Error("the text committed is not remembered as valid")
	}
	got, err := parse(data, "prd.json", false)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Story("A").Passes {
		t.Errorf("A does not pass after the commit")
	}
	var none *Ahead
	none.Close()
	if none.commit([]byte(aheadText), nil) {
		t.Error("a nil Ahead committed")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseReusing: the loop's read of the file it saved takes over the
// stories of its last read that the save left as they were, rather than
// copy them all again, and the File it gets is the one Parse gives; what
// the memo keeps is not shared, and the next save is still known to be
// valid.
func TestParseReusing(t *testing.T) {
	passed := Status{Passes: true, Attempts: 2}
	path, f := readAhead(t)
	a := f.WriteAhead(path, "A", passed)
	if err := SetStatus(path, "prd.json", nil, "A", passed, a); err != nil {
		t.Fatal(err)
	}
	a.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseReusing(data, "prd.json", f)
	if err != nil {
		t.Fatal(err)
	}
	if g.Story("B") != f.Story("B") {
		t.Errorf("the story the save left as it was is a copy")
	}
	if g.Story("A") == f.Story("A") || f.Story("A").Passes {
		t.Errorf("the story the save changed was taken over")
	}
	sameFile(t, g, data)

	// The memo shares nothing with it.
	g.Story("B").Notes = "changed by the caller"
	again, err := Parse(data, "prd.json")
	if err != nil {
		t.Fatal(err)
	}
	if again.Story("B").Notes != "" || again.Story("B") == g.Story("B") {
		t.Errorf("a change to the File ParseReusing gave is in what Parse gives")
	}
	g.Story("B").Notes = ""

	// The next save, from it, is known valid without validating again.
	b := g.WriteAhead(path, "B", passed)
	if err := SetStatus(path, "prd.json", nil, "B", passed, b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if last.Load().ids == nil {
		t.Errorf("the save from the File ParseReusing gave is not known to validate")
	}
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseReusing(data, "prd.json", g)
	if err != nil {
		t.Fatal(err)
	}
	if h.Story("A") != g.Story("A") || !h.Story("A").Passes || !h.Story("B").Passes {
		t.Errorf("the second read after a save: A taken over %v, statuses %+v %+v", h.Story("A") == g.Story("A"), h.Story("A").Status(), h.Story("B").Status())
	}
	sameFile(t, h, data)

	// Stories of another parse are not taken over.
	other := mustParse(t, aheadText)
	o, err := ParseReusing(data, "prd.json", other)
	if err != nil {
		t.Fatal(err)
	}
	if o.Story("A") == other.Story("A") || o.Story("B") == other.Story("B") {
		t.Errorf("a story of another parse was taken over")
	}
	sameFile(t, o, data)
}

// sameFile fails t unless f holds what data parses to afresh.
func sameFile(t testing.TB, f *File, data []byte) {
	t.Helper()
	want, err := parse(data, "prd.json", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Stories) != len(want.Stories) || f.Project != want.Project || !f.ParsedFrom(data) {
		t.Fatalf("File of %d stories, project %q, parsed from the text: %v; want %d, %q", len(f.Stories), f.Project, f.ParsedFrom(data), len(want.Stories), want.Project)
	}
	for i, s := range f.Stories {
		if got, w := exported(s), exported(want.Stories[i]); !reflect.DeepEqual(got, w) || !s.unchanged() {
			t.Errorf("story %d: %+v, want %+v as the text has it (unchanged: %v)", i, got, w, s.unchanged())
		}
	}
	if text, err := f.Marshal(); err != nil || string(text) != string(data) {
		t.Errorf("Marshal: %v\n%s\nwant the text\n%s", err, text, data)
	}
}
