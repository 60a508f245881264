package prd

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestAddStory(t *testing.T) {
	f := mustParse(t, canonical)
	f.AddStory(Story{ID: "US-003", Title: "Refunds", Description: "As a shopper…",
		AcceptanceCriteria: []string{"a", "b"}, Priority: 3, HasPriority: true,
		Checks: []string{"go test ./refund/..."}, DependsOn: []string{"US-001"},
		// Status fields are not taken from the argument.
		Passes: true, Attempts: 2, Blocked: "q", Failed: "f"})
	f.AddStory(Story{ID: "US-004", Title: "Minimal"})
	if err := f.Validate("prd.json"); err != nil {
		t.Fatal(err)
	}
	want := replace(t, canonical, `"blocked": "Which payment provider?"
    }
  ],`, `"blocked": "Which payment provider?"
    },
    {
      "id": "US-003",
      "title": "Refunds",
      "description": "As a shopper…",
      "acceptanceCriteria": [
        "a",
        "b"
      ],
      "priority": 3,
      "passes": false,
      "checks": [
        "go test ./refund/..."
      ],
      "dependsOn": [
        "US-001"
      ]
    },
    {
      "id": "US-004",
      "title": "Minimal",
      "passes": false
    }
  ],`)
	got := mustMarshal(t, f)
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	again := mustParse(t, got)
	if s := exported(again.Story("US-003")); !reflect.DeepEqual(s, Story{ID: "US-003", Title: "Refunds",
		Description: "As a shopper…", AcceptanceCriteria: []string{"a", "b"}, Priority: 3, HasPriority: true,
		Checks: []string{"go test ./refund/..."}, DependsOn: []string{"US-001"}}) {
		t.Errorf("added story parses back as %+v", s)
	}
}

func TestValidateAfterEdit(t *testing.T) {
	f := mustParse(t, canonical)
	f.AddStory(Story{ID: "US-001", Title: "Again", DependsOn: []string{"US-9"}})
	err := f.Validate("prd.json")
	if err == nil {
		t.Fatal("Validate accepted a duplicate id")
	}
	for _, want := range []string{`duplicate id "US-001"`, `dependsOn names unknown story "US-9"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v\nwant it to say %q", err, want)
		}
	}
}

// TestValidateEdits edits a parsed file in every way that changes its ids
// or dependencies: Validate reports each one that breaks the file, and after
// one that does not, its index finds every story where it is.
func TestValidateEdits(t *testing.T) {
	tests := []struct {
		name string
		edit func(f *File)
		want string // "" for a file that validates
	}{
		{"status only", func(f *File) { f.Stories[0].Reset() }, ""},
		{"a title removed", func(f *File) { f.Stories[1].Title = "" }, "US-002: missing title"},
		{"an empty check", func(f *File) { f.Stories[1].Checks[0] = " " }, "US-002: checks[0] is empty"},
		{"negative attempts", func(f *File) { f.Stories[0].Attempts = -1 }, "US-001: attempts: want 0 or more"},
		{"an id made a duplicate", func(f *File) { f.Stories[1].ID = "US-001" }, `duplicate id "US-001"`},
		{"an id removed", func(f *File) { f.Stories[0].ID = "" }, "missing id"},
		{"a dependency changed in place", func(f *File) { f.Stories[1].DependsOn[0] = "US-9" },
			`dependsOn names unknown story "US-9"`},
		{"a dependency added", func(f *File) { f.Stories[0].DependsOn = []string{"US-002"} },
			"dependsOn cycle: US-001 -> US-002 -> US-001"},
		{"a story replaced", func(f *File) {
			f.Stories[1] = &Story{ID: "US-001", Title: "Again"}
		}, `duplicate id "US-001"`},
		{"a story listed twice", func(f *File) { f.Stories[1] = f.Stories[0] }, `duplicate id "US-001"`},
		{"a story added", func(f *File) { f.Stories = append(f.Stories, &Story{ID: "US-002", Title: "Again"}) },
			`duplicate id "US-002"`},
		{"stories swapped", func(f *File) {
			f.Stories[0], f.Stories[1] = f.Stories[1], f.Stories[0]
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, canonical)
			tt.edit(f)
			err := f.Validate("prd.json")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate: %v\nwant it to say %q", err, tt.want)
			}
			if err != nil {
				return
			}
			for i, s := range f.Stories {
				if j, ok := indexed(f, s.ID); f.Story(s.ID) != s || !ok || j != i {
					t.Errorf("story %q is userStories[%d], index %d, %v", s.ID, i, j, ok)
				}
			}
		})
	}
}

// TestValidateEditedBack changes an id, validates, and changes it back: the
// index made for the changed id must not outlive it.
func TestValidateEditedBack(t *testing.T) {
	f := mustParse(t, canonical)
	f.Stories[0].ID = "US-003"
	f.Stories[1].DependsOn = []string{"US-003"}
	if err := f.Validate("prd.json"); err != nil {
		t.Fatal(err)
	}
	f.Stories[0].ID = "US-001"
	f.Stories[1].DependsOn = []string{"US-001"}
	if err := f.Validate("prd.json"); err != nil {
		t.Fatal(err)
	}
	_, stale := indexed(f, "US-003")
	if i, ok := indexed(f, "US-001"); stale || !ok || i != 0 {
		t.Errorf("index after the edits: US-003 found %v, US-001 at %d, %v", stale, i, ok)
	}
}

// indexed looks id up in f's index of ids.
func indexed(f *File, id string) (int, bool) {
	return f.ids.lookup(idHash(id), id, f.Stories)
}

func TestAnswer(t *testing.T) {
	s := &Story{ID: "A", Title: "a", Attempts: 2, Blocked: "Which db?"}
	if err := s.Answer("Postgres"); err != nil {
		t.Fatal(err)
	}
	s.Blocked = "Which version?"
	if err := s.Answer("16"); err != nil {
		t.Fatal(err)
	}
	want := &Story{ID: "A", Title: "a", Attempts: 2, Answers: []Answer{
		{Question: "Which db?", Answer: "Postgres"}, {Question: "Which version?", Answer: "16"}}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	if err := s.Answer("again"); err == nil || !strings.Contains(err.Error(), "A is not blocked") {
		t.Errorf("Answer on an unblocked story: %v", err)
	}
	if len(s.Answers) != 2 {
		t.Errorf("a refused answer was kept: %+v", s.Answers)
	}
}

func TestReset(t *testing.T) {
	answers := []Answer{{Question: "q", Answer: "a"}}
	s := &Story{ID: "A", Title: "a", Passes: true, Attempts: 5, Blocked: "b", Failed: "f", Answers: answers}
	s.Reset()
	want := &Story{ID: "A", Title: "a", Answers: answers}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
}

// TestAnswerKeepsAnswers: an answer recorded keeps the answers before it
// as the file has them, members ralph does not know and their order
// included, whatever the file's layout.
func TestAnswerKeepsAnswers(t *testing.T) {
	for name, data := range map[string]string{
		"minified": `{"userStories":[{"id":"A","title":"a","blocked":"Which version?","answers":[{"answer":"Postgres","question":"Which DB?","by":"alice"}]}]}`,
		"tabs":     "{\n\t\"userStories\": [\n\t\t{\n\t\t\t\"id\": \"A\",\n\t\t\t\"title\": \"a\",\n\t\t\t\"blocked\": \"Which version?\",\n\t\t\t\"answers\": [\n\t\t\t\t{\"answer\": \"Postgres\", \"question\": \"Which DB?\", \"by\": \"alice\"}\n\t\t\t]\n\t\t}\n\t]\n}\n",
		"canonical": `{
  "userStories": [
    {
      "id": "A",
      "title": "a",
      "blocked": "Which version?",
      "answers": [
        {
          "answer": "Postgres",
          "question": "Which DB?",
          "by": "alice"
        }
      ]
    }
  ]
}
`,
	} {
		t.Run(name, func(t *testing.T) {
			f, err := Parse([]byte(data), "prd.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Stories[0].Answer("16"); err != nil {
				t.Fatal(err)
			}
			got, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			want := `{
  "userStories": [
    {
      "id": "A",
      "title": "a",
      "blocked": "",
      "answers": [
        {
          "answer": "Postgres",
          "question": "Which DB?",
          "by": "alice"
        },
        {
          "question": "Which version?",
          "answer": "16"
        }
      ]
    }
  ]
}
`
			if string(got) != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			// What is written reads back as the answers recorded.
			back, err := Parse(got, "prd.json")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(back.Stories[0].Answers, f.Stories[0].Answers) {
				t.Errorf("read back: %+v, want %+v", back.Stories[0].Answers, f.Stories[0].Answers)
			}
		})
	}
}
