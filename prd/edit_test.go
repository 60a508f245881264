package prd

import (
	"reflect"
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
