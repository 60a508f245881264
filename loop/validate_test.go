package loop

import (
	"errors"
	"os"
	"path/filepath"
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

// TestLedgerConflict: a marker in the ledger's last 64 KiB is found, one
// before it is not looked for, and a line cut by the window's start is no
// marker.
func TestLedgerConflict(t *testing.T) {
	filler := strings.Repeat("x", 99) + "\n"
	for _, c := range []struct {
		name, text string
		want       bool
	}{
		{"at the end", "# notes\n<<<<<<< HEAD\n", true},
		{"other side", "a\n>>>>>>> other\nb\n", true},
		{"none", "# notes\n=======\n", false},
		{"before the window", "<<<<<<< HEAD\n" + strings.Repeat(filler, conflictTail/len(filler)+1), false},
		// The window begins at the "<" of "abc<<<<<<< x": no line's start.
		{"cut by the window", filler + "abc<<<<<<< x\n" + strings.Repeat("z", conflictTail-len("<<<<<<< x\n")-1) + "\n", false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ProgressFile), []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := LedgerConflict(dir) != ""; got != c.want {
			t.Errorf("%s: found = %v, want %v", c.name, got, c.want)
		}
	}
	if LedgerConflict(t.TempDir()) != "" {
		t.Error("a missing ledger has a conflict")
	}
}
