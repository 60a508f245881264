package prd

import (
	"reflect"
	"testing"
)

// story builds a story for selection tests: id, then an optional priority.
func story(id string, priority ...int) *Story {
	s := &Story{ID: id, Title: id}
	if len(priority) > 0 {
		s.Priority, s.HasPriority = priority[0], true
	}
	return s
}

func with(s *Story, change func(s *Story)) *Story {
	change(s)
	return s
}

func dependsOn(ids ...string) func(*Story) { return func(s *Story) { s.DependsOn = ids } }
func passes(s *Story)                      { s.Passes = true }
func blocked(s *Story)                     { s.Blocked = "which db?" }
func failed(s *Story)                      { s.Failed = "max attempts" }

func TestNext(t *testing.T) {
	tests := []struct {
		name    string
		stories []*Story
		want    string // "" for nil
	}{
		{"lowest number first", []*Story{story("A", 3), story("B", 1), story("C", 2)}, "B"},
		{"ties keep file order", []*Story{story("A", 2), story("B", 1), story("C", 1)}, "B"},
		{"zero and negative priorities", []*Story{story("A", 1), story("B", 0), story("C", -1)}, "C"},
		{"no priority comes last", []*Story{story("A"), story("B", 9)}, "B"},
		{"no priority at all keeps file order", []*Story{story("A"), story("B")}, "A"},
		{"done skipped", []*Story{with(story("A", 1), passes), story("B", 2)}, "B"},
		{"blocked skipped", []*Story{with(story("A", 1), blocked), story("B", 2)}, "B"},
		{"failed skipped", []*Story{with(story("A", 1), failed), story("B", 2)}, "B"},
		{"waits for a dependency", []*Story{with(story("A", 1), dependsOn("B")), story("B", 2)}, "B"},
		{"dependency done", []*Story{with(story("A", 1), dependsOn("B")), with(story("B", 2), passes)}, "A"},
		{"all dependencies must be done", []*Story{
			with(story("A", 1), dependsOn("B", "C")), with(story("B", 2), passes), story("C", 3)}, "C"},
		{"dependency blocked", []*Story{with(story("A", 1), dependsOn("B")), with(story("B", 2), blocked)}, ""},
		{"dependency failed", []*Story{with(story("A", 1), dependsOn("B")), with(story("B", 2), failed)}, ""},
		{"all done", []*Story{with(story("A", 1), passes), with(story("B"), passes)}, ""},
		{"no stories", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &File{Stories: tt.stories}
			got := ""
			if s := f.Next(); s != nil {
				got = s.ID
			}
			if got != tt.want {
				t.Errorf("Next() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNextFromFile(t *testing.T) {
	f := mustParse(t, `{"userStories": [
		{"id": "US-001", "title": "a", "priority": 2},
		{"id": "US-002", "title": "b"},
		{"id": "US-003", "title": "c", "priority": 1, "dependsOn": ["US-001"]},
		{"id": "US-004", "title": "d", "priority": 2}]}`)
	var order []string
	for s := f.Next(); s != nil; s = f.Next() {
		order = append(order, s.ID)
		s.Passes = true
	}
	if want := []string{"US-001", "US-003", "US-004", "US-002"}; !reflect.DeepEqual(order, want) {
		t.Errorf("stories ran in order %q, want %q", order, want)
	}
	if !f.Done() {
		t.Error("Done() = false after every story passed")
	}
}

func TestState(t *testing.T) {
	tests := []struct {
		name  string
		story *Story
		want  string
	}{
		{"todo", story("A"), StateTodo},
		{"done wins over everything", with(story("A"), func(s *Story) {
			passes(s)
			failed(s)
			blocked(s)
			dependsOn("T")(s)
		}), StateDone},
		{"failed wins over blocked", with(with(story("A"), failed), blocked), StateFailed},
		{"blocked wins over waiting", with(with(story("A"), blocked), dependsOn("T")), StateBlocked},
		{"waiting", with(story("A"), dependsOn("D", "T")), StateWaiting},
		{"dependency done", with(story("A"), dependsOn("D")), StateTodo},
		{"unknown dependency", with(story("A"), dependsOn("nope")), StateWaiting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &File{Stories: []*Story{tt.story, with(story("D"), passes), story("T")}}
			if got := f.State(tt.story); got != tt.want {
				t.Errorf("State() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDone(t *testing.T) {
	tests := []struct {
		name    string
		stories []*Story
		want    bool
	}{
		{"no stories", nil, false},
		{"all pass", []*Story{with(story("A"), passes), with(story("B"), passes)}, true},
		{"one left", []*Story{with(story("A"), passes), story("B")}, false},
		{"failed is not done", []*Story{with(story("A"), passes), with(story("B"), failed)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&File{Stories: tt.stories}).Done(); got != tt.want {
				t.Errorf("Done() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	f := mustParse(t, canonical)
	want := map[string]Status{
		"US-001": {Attempts: 3, Failed: "failed"},
		"US-002": {Blocked: "Which payment provider?"},
	}
	for id, st := range want {
		if got := f.Story(id).Status(); got != st {
			t.Errorf("%s: Status() = %+v, want %+v", id, got, st)
		}
	}
	// A Status is a copy: the guard compares one with a later load.
	st := f.Story("US-002").Status()
	f.Story("US-002").Passes = true
	if got := f.Story("US-002").Status(); got == st {
		t.Errorf("Status() after a change = %+v, want it to differ from %+v", got, st)
	}
}

func TestStory(t *testing.T) {
	f := &File{Stories: []*Story{story("A"), story("B")}}
	if s := f.Story("B"); s != f.Stories[1] {
		t.Errorf("Story(%q) = %v, want the second story", "B", s)
	}
	if s := f.Story("C"); s != nil {
		t.Errorf("Story(%q) = %v, want nil", "C", s)
	}
}

func TestStatusRoundTrip(t *testing.T) {
	st := Status{Passes: true, Attempts: 2, Blocked: "b", Failed: "f"}
	var s Story
	s.SetStatus(st)
	if got := s.Status(); got != st {
		t.Errorf("Status() after SetStatus(%+v) = %+v", st, got)
	}
}

func TestParsedFrom(t *testing.T) {
	text := []byte(`{"userStories": [{"id": "US-001", "title": "One", "priority": 1, "passes": false}]}`)
	other := []byte(`{"userStories": [{"id": "US-001", "title": "One", "priority": 1, "passes": true}]}`)
	f, err := Parse(text, "prd.json")
	if err != nil {
		t.Fatal(err)
	}
	if !f.ParsedFrom(text) || f.ParsedFrom(other) {
		t.Errorf("ParsedFrom(text) = %v, ParsedFrom(other) = %v; want true, false", f.ParsedFrom(text), f.ParsedFrom(other))
	}
	// Changes to the File do not change the text it came from.
	f.Stories[0].Passes = true
	if !f.ParsedFrom(text) {
		t.Error("ParsedFrom(text) = false after a change to the File")
	}
	// The same text again comes from what Parse remembers.
	again, err := Parse(text, "prd.json")
	if err != nil {
		t.Fatal(err)
	}
	if !again.ParsedFrom(text) {
		t.Error("a File Parse remembered: ParsedFrom(text) = false")
	}
	if (&File{}).ParsedFrom(nil) {
		t.Error("a File made by hand: ParsedFrom(nil) = true")
	}
}
