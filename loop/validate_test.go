package loop

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestConflictMarker: a conflict's marker is a whole line's start, counted
// as a line however long the lines before it are; the same text inside a
// line is none.
func TestConflictMarker(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	for _, c := range []struct {
		text string
		want int
	}{
		{"a\nb\n", 0},
		{"<<<<<<< HEAD\n", 1},
		{"a\r\n<<<<<<< HEAD\r\nb\n", 2},
		{"Notes\n=======\n", 0}, // a heading
		{long + "\n" + long + "\n>>>>>>> other\n", 3},
		{long + ">>>>>>> other\n", 0},
		{"a\n" + long + "<<<<<<< HEAD" + "\n", 0},
		{"x =======\n", 0},
	} {
		// Written in pieces, as a reader hands them on.
		w := &conflictWatch{line: 1}
		for piece := range slices.Chunk([]byte(c.text), 5000) {
			w.Write(piece)
		}
		small := &conflictWatch{line: 1}
		for piece := range slices.Chunk([]byte(c.text), 3) {
			small.Write(piece)
		}
		if w.found != c.want || small.found != c.want {
			t.Errorf("conflictWatch(%.20q…) found line %d (in small pieces %d), want %d", c.text, w.found, small.found, c.want)
		}
	}
}

// TestTemplateEmptyPrompt: a project's template that renders an empty
// prompt, on any data, is bad input naming its file; one with no text at
// all is not taken for no template.
func TestTemplateEmptyPrompt(t *testing.T) {
	for _, c := range []struct {
		text string
		ok   bool
	}{
		{"", false},
		{" \n\t\n", false},
		{"{{/* to do */}}\n", false},
		{"{{with .Previous}}{{.}}{{end}}", false}, // empty on a first iteration
		{"Work on {{.Story.ID}}.", true},
	} {
		o := &Options{Config: Config{PromptTemplateName: "my.tmpl", PromptTemplate: c.text}}
		_, err := o.template()
		var input *InputError
		switch {
		case c.ok && err != nil:
			t.Errorf("template(%q): error %v, want ok", c.text, err)
		case !c.ok && (!errors.As(err, &input) || !strings.HasPrefix(err.Error(), "my.tmpl: the template renders an empty prompt")):
			t.Errorf("template(%q): error %v, want an InputError: my.tmpl: the template renders an empty prompt…", c.text, err)
		}
	}
}
