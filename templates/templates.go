// Package templates renders the prompt that ralph gives the agent each
// iteration. The default template is embedded; a project may replace it with
// its own file, executed with the same typed data.
package templates

import (
	_ "embed"
	"fmt"
	"strings"
	"text/template"
)

//go:embed prompt.tmpl
var defaultPrompt string

// Prompt is the data a prompt template is executed with.
type Prompt struct {
	Project     string
	Description string
	Story       Story
	Iteration   int
	Attempt     int
	MaxAttempts int
	// Checks are what ralph runs after the agent stops.
	Checks []Check
	// Failures are the failing checks of this story's previous attempt.
	Failures []Failure
	// Previous summarises this story's previous attempt; empty on the first.
	Previous string
	// Head is the free text at the top of progress.txt.
	Head string
	// Recent are the last few ledger entries, oldest first.
	Recent []string
	// Commit is whether ralph commits after judging, so the agent must not.
	Commit bool
	// Protected are globs of files the agent may not touch.
	Protected []string
}

// Story is the task the agent works on.
type Story struct {
	ID                 string
	Title              string
	Description        string
	AcceptanceCriteria []string
	Notes              string
	// Answers are a person's answers to the questions the agent asked
	// about this story in earlier iterations, oldest first.
	Answers []Answer
}

// Answer is a question an agent asked and a person's answer to it.
type Answer struct {
	Question string
	Answer   string
}

// Check is one command ralph runs to judge the work.
type Check struct {
	Name     string
	Run      string
	Required bool
}

// Failure is a check that failed, with the tail of its output.
type Failure struct {
	Name   string
	Run    string
	Output string
}

// Template is a parsed prompt template.
type Template struct {
	t *template.Template
}

// Default returns the embedded prompt template.
func Default() *Template {
	t, err := Parse("prompt.tmpl", defaultPrompt)
	if err != nil {
		panic(err) // the embedded template is tested
	}
	return t
}

// Parse parses a prompt template; name is used in error messages.
func Parse(name, text string) (*Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(template.FuncMap{
		"trim": strings.TrimSpace,
	}).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parse prompt template: %w", err)
	}
	return &Template{t: t}, nil
}

// Samples renders the template with data of each shape a prompt's data
// takes, so that a mistake is found before the first iteration rather than
// in the middle of a run: an unknown field, or an index into a list that a
// first iteration has empty ({{index .Recent 0}}). It returns the prompts.
func (t *Template) Samples() ([]string, error) {
	samples := []struct {
		name string
		p    Prompt
	}{
		// A first iteration's: no previous attempt, no ledger, no checks,
		// nothing optional.
		{"a first iteration's data (empty lists and fields)", Prompt{
			Story:     Story{ID: "US-001", Title: "title"},
			Iteration: 1, Attempt: 1, MaxAttempts: 1,
		}},
		{"data in every field (one item in each list)", Prompt{
			Project:     "project",
			Description: "description",
			Story: Story{
				ID: "US-001", Title: "title", Description: "description",
				AcceptanceCriteria: []string{"criterion"}, Notes: "notes",
				Answers: []Answer{{Question: "question", Answer: "answer"}},
			},
			Iteration: 2, Attempt: 2, MaxAttempts: 2,
			Checks:    []Check{{Name: "test", Run: "true", Required: true}},
			Failures:  []Failure{{Name: "test", Run: "true", Output: "output"}},
			Previous:  "previous",
			Head:      "head",
			Recent:    []string{"recent"},
			Commit:    true,
			Protected: []string{"LICENSE"},
		}},
	}
	var out []string
	for _, s := range samples {
		prompt, err := t.render(s.p, " with "+s.name)
		if err != nil {
			return nil, err
		}
		out = append(out, prompt)
	}
	return out, nil
}

// Render executes the template with p.
func (t *Template) Render(p Prompt) (string, error) { return t.render(p, "") }

// render executes the template with p; an error says what it rendered,
// with which data.
func (t *Template) render(p Prompt, with string) (string, error) {
	var b strings.Builder
	if err := t.t.Execute(&b, p); err != nil {
		return "", fmt.Errorf("render prompt template%s: %w", with, err)
	}
	return b.String(), nil
}
