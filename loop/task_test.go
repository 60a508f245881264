package loop

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/progress"
)

const taskPRD = `{
  "userStories": [
    {"id": "A", "title": "a", "passes": true, "attempts": 1},
    {"id": "B", "title": "b", "passes": false, "blocked": "Which DB?"},
    {"id": "C", "title": "c", "passes": false, "attempts": 5, "failed": "no attempts left"},
    {"id": "D", "title": "d", "passes": false}
  ]
}
`

func taskDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PRDFile), []byte(taskPRD), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTaskBadInput checks that every refused edit is an *InputError that
// names the problem and leaves prd.json as it was.
func TestTaskBadInput(t *testing.T) {
	tests := []struct {
		name string
		edit func(dir string) error
		want string
	}{
		{"add: taken id", func(dir string) error {
			_, err := AddStory(Options{Dir: dir}, NewStory{ID: "B", Title: "t"})
			return err
		}, `prd.json already has a story "B" (userStories[1])`},
		{"add: unknown dependency", func(dir string) error {
			_, err := AddStory(Options{Dir: dir}, NewStory{ID: "E", Title: "t", DependsOn: []string{"A", "Z"}})
			return err
		}, `dependsOn "Z": prd.json has no such story`},
		{"add: self dependency", func(dir string) error {
			_, err := AddStory(Options{Dir: dir}, NewStory{ID: "E", Title: "t", DependsOn: []string{"E"}})
			return err
		}, `dependsOn "E": a story cannot depend on itself`},
		{"add: bad id, empty title and check", func(dir string) error {
			_, err := AddStory(Options{Dir: dir}, NewStory{ID: "E F", Title: " ", Checks: []string{""}})
			return err
		}, "id \"E F\": contains a space or a control character\ntitle: empty\nchecks[0]: empty command"},
		{"answer: not blocked", func(dir string) error {
			_, _, err := AnswerStory(Options{Dir: dir}, "D", "x")
			return err
		}, "D is todo, not blocked: there is no question to answer"},
		{"answer: unknown story", func(dir string) error {
			_, _, err := AnswerStory(Options{Dir: dir}, "Z", "x")
			return err
		}, `prd.json has no story "Z"`},
		{"reset: unknown story", func(dir string) error {
			_, _, err := ResetStory(Options{Dir: dir}, "Z")
			return err
		}, `prd.json has no story "Z"`},
		{"block: done", func(dir string) error {
			_, _, err := BlockStory(Options{Dir: dir}, "A", "q")
			return err
		}, "A is done: run `ralph task reset A` first to work on it again"},
		{"block: failed", func(dir string) error {
			_, _, err := BlockStory(Options{Dir: dir}, "C", "q")
			return err
		}, "C is failed: run `ralph task reset C` first to work on it again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := taskDir(t)
			err := tt.edit(dir)
			var input *InputError
			if !errors.As(err, &input) {
				t.Fatalf("got error %v (%T), want an *InputError", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %q\nwant %q", err, tt.want)
			}
			if data, _ := os.ReadFile(filepath.Join(dir, PRDFile)); string(data) != taskPRD {
				t.Errorf("prd.json changed to:\n%s", data)
			}
		})
	}
}

func TestTaskEdits(t *testing.T) {
	dir := taskDir(t)
	s, question, err := AnswerStory(Options{Dir: dir}, "B", "Postgres")
	if err != nil {
		t.Fatal(err)
	}
	if question != "Which DB?" || s.State != "todo" || len(s.Answers) != 1 || s.Answers[0].Answer != "Postgres" {
		t.Errorf("AnswerStory: question %q, story %+v", question, s)
	}
	before, after, err := ResetStory(Options{Dir: dir}, "C")
	if err != nil {
		t.Fatal(err)
	}
	if before.State != "failed" || after.State != "todo" || after.Attempts != 0 || after.Failed != "" {
		t.Errorf("ResetStory: before %+v, after %+v", before, after)
	}
	_, replaced, err := BlockStory(Options{Dir: dir}, "D", "Serif?")
	if err != nil || replaced != "" {
		t.Errorf("BlockStory = %q, %v", replaced, err)
	}
	added, err := AddStory(Options{Dir: dir}, NewStory{ID: "E", Title: "e", DependsOn: []string{"D"}, HasPriority: true})
	if err != nil {
		t.Fatal(err)
	}
	if added.State != "waiting" || added.Priority == nil || *added.Priority != 0 {
		t.Errorf("AddStory: %+v", added)
	}
	l, err := Tasks(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, s := range l.Stories {
		states = append(states, s.ID+"="+s.State)
	}
	if got, want := strings.Join(states, " "), "A=done B=todo C=todo D=blocked E=waiting"; got != want {
		t.Errorf("states after the edits: %s, want %s", got, want)
	}
	r, err := Next(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if r.Story == nil || r.Story.ID != "B" || len(r.Blocked) != 1 || r.Blocked[0].ID != "D" {
		t.Errorf("Next: %+v", r)
	}
}

// TestReadStories: the loop picks its story from prd.json as read under
// the lock it holds until the iteration's marker, so that a `ralph task`
// edit (which waits for no loop) is either in the pick or finds the story
// running. The pick sees every edit made before it; the text it read is
// the file's, which the snapshot keeps.
func TestReadStories(t *testing.T) {
	edits := []struct {
		name string
		edit func(dir string) error
		next string // the story picked; "" for none
		bad  bool   // an input error instead
	}{
		{"none", func(string) error { return nil }, "D", false},
		{"the story blocked and answered", func(dir string) error {
			if _, _, err := BlockStory(Options{Dir: dir}, "D", "Which table?"); err != nil {
				return err
			}
			_, _, err := AnswerStory(Options{Dir: dir}, "D", "carts")
			return err
		}, "D", false},
		{"another story blocked", func(dir string) error { _, _, err := BlockStory(Options{Dir: dir}, "B", "Which table?"); return err }, "D", false},
		{"the story blocked", func(dir string) error { _, _, err := BlockStory(Options{Dir: dir}, "D", "Which table?"); return err }, "", false},
		{"a story added ahead of it", func(dir string) error {
			_, err := AddStory(Options{Dir: dir}, NewStory{ID: "E", Title: "e", Priority: -1, HasPriority: true})
			return err
		}, "E", false},
		{"the file broken", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, PRDFile), []byte("{"), 0o644)
		}, "", true},
		{"the file removed", func(dir string) error { return os.Remove(filepath.Join(dir, PRDFile)) }, "", true},
	}
	for _, tt := range edits {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Dir: taskDir(t), Err: io.Discard}
			// What the loop picked before the edit.
			if f, err := o.loadStories(); err != nil || f.Next() == nil || f.Next().ID != "D" {
				t.Fatalf("before the edit: %v, want D to run", err)
			}
			if err := tt.edit(o.Dir); err != nil {
				t.Fatal(err)
			}
			unlock := o.lockPRD()
			defer unlock()
			f, text, err := o.readStories(nil)
			var input *InputError
			if tt.bad {
				if !errors.As(err, &input) {
					t.Fatalf("readStories = %v, want an input error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if next := f.Next(); next == nil && tt.next != "" || next != nil && next.ID != tt.next {
				t.Fatalf("picked %v, want %q", next, tt.next)
			}
			// The text it read is the file as it is, which the snapshot
			// keeps: f was parsed from it.
			disk, err := os.ReadFile(filepath.Join(o.Dir, PRDFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(text, disk) || !f.ParsedFrom(text) {
				t.Errorf("readStories' text is not the file's, or not what it returned was parsed from")
			}
			if s, err := takeOwn(&o, text); err != nil || !bytes.Equal(s.prd, disk) {
				t.Errorf("the snapshot taken with readStories' text: %v, prd.json's copy equal to the file: %v", err, bytes.Equal(s.prd, disk))
			}
			want, err := o.loadPRD()
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Story("D"); !reflect.DeepEqual(got.Answers, want.Story("D").Answers) || got.Blocked != want.Story("D").Blocked {
				t.Errorf("readStories gave %+v, want D as prd.json has it now, %+v", got, want.Story("D"))
			}
		})
	}
}

// TestWaitingForPRD: an edit that waits for prd.json's lock names who
// holds the directory's: a running loop, a `ralph task` edit recording an
// iteration a stopped ralph left open, or neither.
func TestWaitingForPRD(t *testing.T) {
	dir := taskDir(t)
	path := filepath.Join(dir, ProgressFile)
	var out bytes.Buffer
	o := Options{Dir: dir, Err: &out}
	said := func() string {
		t.Helper()
		o.waitingForPRD()
		s := out.String()
		out.Reset()
		return s
	}
	if s := said(); !strings.Contains(s, "which another process holds (no `ralph loop` runs in") {
		t.Errorf("with nothing holding the directory: %q", s)
	}
	l, err := progress.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := said(); !strings.Contains(s, "which the `ralph loop` running in "+dir) {
		t.Errorf("with a loop holding the directory: %q", s)
	}
	l.Close()
	l, err = progress.OpenBrief(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if s := said(); !strings.Contains(s, "which a `ralph task` edit") || !strings.Contains(s, "records the iteration a stopped ralph left open") {
		t.Errorf("with a `ralph task` edit holding the directory: %q", s)
	}
}
