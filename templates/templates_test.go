package templates

import (
	"strings"
	"testing"
)

func full() Prompt {
	return Prompt{
		Project:     "Shop",
		Description: "Checkout",
		Story: Story{
			ID: "US-001", Title: "Add cart", Description: "As a shopper…",
			AcceptanceCriteria: []string{"a", "b"}, Notes: "see db/",
			Answers: []Answer{{Question: "Which db?", Answer: "Postgres"}},
		},
		Iteration: 4, Attempt: 2, MaxAttempts: 5,
		Checks:   []Check{{Name: "test", Run: "go test ./...", Required: true}, {Name: "lint", Run: "golint"}},
		Failures: []Failure{{Name: "test", Run: "go test ./...", Output: "--- FAIL: TestCart"}},
		Previous: "- iteration 3 · US-001 · retry",
		Head:     "## Codebase Patterns\n- use sqlc",
		Recent:   []string{"- iteration 3 · US-001 · retry"},
		Commit:   true,
	}
}

func TestDefaultRendersEverything(t *testing.T) {
	out, err := Default().Render(full())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"US-001 — Add cart", "As a shopper…", "- a\n- b\n", "see db/", "attempt 2 of 5",
		"--- FAIL: TestCart", "- test: `go test ./...`", "- lint: `golint` (informational)",
		"use sqlc", "Do not commit", "<ralph>done</ralph>", "<ralph>blocked:",
		"## Answers to your earlier questions\n\nQ: Which db?\nA: Postgres\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("prompt lacks %q:\n%s", want, out)
		}
	}
}

func TestDefaultMinimal(t *testing.T) {
	out, err := Default().Render(Prompt{Story: Story{ID: "A", Title: "t"}, Attempt: 1, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"What failed last time", "Acceptance criteria", "Do not commit", "Recent iterations", "Answers"} {
		if strings.Contains(out, absent) {
			t.Errorf("minimal prompt has %q:\n%s", absent, out)
		}
	}
	if !strings.Contains(out, "no checks") {
		t.Errorf("minimal prompt does not say that no checks run:\n%s", out)
	}
}

// The prompt must never end with a reply tag: an agent that echoes it back
// would otherwise claim something by accident.
func TestDefaultDoesNotEndWithATag(t *testing.T) {
	out, err := Default().Render(full())
	if err != nil {
		t.Fatal(err)
	}
	last := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	if strings.HasPrefix(last, "<ralph>") {
		t.Errorf("prompt ends with a tag line: %q", last)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := Parse("my.tmpl", "{{.Story"); err == nil || !strings.Contains(err.Error(), "my.tmpl") {
		t.Errorf("syntax error = %v, want one naming my.tmpl", err)
	}
	tmpl, err := Parse("my.tmpl", "{{.Nope}}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(full()); err == nil || !strings.Contains(err.Error(), "Nope") {
		t.Errorf("unknown field error = %v", err)
	}
}

// Samples finds what fails on a prompt of any shape, the first iteration's
// empty lists among them, and passes what renders on every one.
func TestSamples(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{defaultPrompt, true},
		{"{{.Story.ID}} {{range .Recent}}{{.}}{{end}}", true},
		{"{{with .Failures}}{{(index . 0).Name}}{{end}}", true},
		{"{{index .Recent 0}}", false},
		{"{{index .Story.AcceptanceCriteria 0}}", false},
		{"{{(index .Checks 0).Name}}", false},
		{"{{if .Recent}}{{index .Recent 1}}{{end}}", false},
		{"{{if .Previous}}{{.Story.Assignee}}{{end}}", false},
	} {
		tmpl, err := Parse("my.tmpl", tc.text)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tmpl.Samples()
		if got := err == nil; got != tc.ok {
			t.Errorf("Samples of %.40q: error %v, want ok %v", tc.text, err, tc.ok)
		}
	}
}
