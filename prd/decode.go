package prd

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// key is a member of a JSON object that this package knows: how to decode it
// into a T, and how to read it back for Marshal.
type key[T any] struct {
	name   string
	decode func(d *decoder, t *T, v []byte, off int, path string)
	// get returns the value to write and whether to add the key when the
	// object lacks it. A nil value removes the key.
	get func(t *T) (v any, add bool)
}

// fileKeys are the top-level keys, in the order Marshal adds missing ones.
var fileKeys = []key[File]{
	{"project",
		func(d *decoder, f *File, v []byte, off int, path string) { f.Project = d.string(v, off, path) },
		func(f *File) (any, bool) { return f.Project, f.Project != "" }},
	{"branchName",
		func(d *decoder, f *File, v []byte, off int, path string) { f.BranchName = d.string(v, off, path) },
		func(f *File) (any, bool) { return f.BranchName, f.BranchName != "" }},
	{"description",
		func(d *decoder, f *File, v []byte, off int, path string) { f.Description = d.string(v, off, path) },
		func(f *File) (any, bool) { return f.Description, f.Description != "" }},
	{"userStories",
		func(d *decoder, f *File, v []byte, off int, path string) { f.Stories = d.stories(v, off, path) },
		func(f *File) (any, bool) { return storiesJSON(f.Stories), true }},
}

// storyKeys are the keys of a story, in the order Marshal adds missing ones:
// the status keys come last, so a story that gains status keeps its look.
var storyKeys = []key[Story]{
	{"id",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.ID = d.string(v, off, path) },
		func(s *Story) (any, bool) { return s.ID, s.ID != "" }},
	{"title",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Title = d.string(v, off, path) },
		func(s *Story) (any, bool) { return s.Title, s.Title != "" }},
	{"description",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Description = d.string(v, off, path) },
		func(s *Story) (any, bool) { return s.Description, s.Description != "" }},
	{"acceptanceCriteria",
		func(d *decoder, s *Story, v []byte, off int, path string) {
			s.AcceptanceCriteria = d.strings(v, off, path)
		},
		func(s *Story) (any, bool) { return s.AcceptanceCriteria, len(s.AcceptanceCriteria) > 0 }},
	{"priority",
		func(d *decoder, s *Story, v []byte, off int, path string) {
			s.Priority, s.HasPriority = d.int(v, off, path)
		},
		func(s *Story) (any, bool) {
			if !s.HasPriority {
				return nil, false
			}
			return s.Priority, true
		}},
	{"notes",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Notes = d.string(v, off, path) },
		func(s *Story) (any, bool) { return s.Notes, s.Notes != "" }},
	{"checks",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Checks = d.strings(v, off, path) },
		func(s *Story) (any, bool) { return s.Checks, len(s.Checks) > 0 }},
	{"dependsOn",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.DependsOn = d.strings(v, off, path) },
		func(s *Story) (any, bool) { return s.DependsOn, len(s.DependsOn) > 0 }},
	{"passes",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Passes = d.bool(v, off, path) },
		func(s *Story) (any, bool) { return s.Passes, s.Passes }},
	{"attempts",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Attempts, _ = d.int(v, off, path) },
		func(s *Story) (any, bool) { return s.Attempts, s.Attempts != 0 }},
	{"blocked",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Blocked = d.string(v, off, path) },
		func(s *Story) (any, bool) { return s.Blocked, s.Blocked != "" }},
	{"failed",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Failed = d.failed(v, off, path) },
		func(s *Story) (any, bool) { return s.Failed, s.Failed != "" }},
	{"answers",
		func(d *decoder, s *Story, v []byte, off int, path string) { s.Answers = d.answers(v, off, path) },
		func(s *Story) (any, bool) { return s.Answers, len(s.Answers) > 0 }},
}

func lookup[T any](keys []key[T], name string) *key[T] {
	i := slices.IndexFunc(keys, func(k key[T]) bool { return k.name == name })
	if i < 0 {
		return nil
	}
	return &keys[i]
}

// Parse decodes and validates the contents of a prd.json file. Messages name
// the file as name, usually the path as the user gave it. All problems are
// reported at once, one per line.
func Parse(data []byte, name string) (*File, error) {
	// encoding/json checks the syntax, so the walk below can trust it.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var serr *json.SyntaxError
		if errors.As(err, &serr) {
			return nil, fmt.Errorf("%s: %w", at(name, data, syntaxOffset(data, serr)), serr)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := &decoder{data: data, name: name}
	f := d.file(skipSpace(data, 0))
	if len(d.errs) > 0 {
		// Checking the meaning of a file of the wrong shape would only add noise.
		return nil, errors.Join(d.errs...)
	}
	if err := f.validate(name, d.hasStories); err != nil {
		return nil, err
	}
	return f, nil
}

// decoder turns the raw JSON of a prd.json into a File, collecting an error
// for every value of the wrong type.
type decoder struct {
	data       []byte
	name       string
	errs       []error
	hasStories bool // the file has a userStories member that is not null
}

// errorf records an error about the value at offset off, whose JSON path is path.
func (d *decoder) errorf(off int, path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	d.errs = append(d.errs, fmt.Errorf("%s: %s", at(d.name, d.data, off), msg))
}

func (d *decoder) file(off int) *File {
	v := d.data[off:valueEnd(d.data, off)]
	if v[0] != '{' {
		d.errorf(off, "", "want an object, got %s", kind(v))
		return nil
	}
	f := &File{fields: fields(d.data, off)}
	decodeObject(d, f, f.fields, fileKeys, "")
	f.orig = &File{Project: f.Project, BranchName: f.BranchName, Description: f.Description}
	return f
}

func (d *decoder) stories(v []byte, off int, path string) []*Story {
	switch v[0] {
	case 'n':
		return nil
	case '[':
	default:
		d.errorf(off, path, "want an array, got %s", kind(v))
		return nil
	}
	d.hasStories = true
	var stories []*Story
	for i, e := range elements(d.data, off) {
		path := fmt.Sprintf("%s[%d]", path, i)
		if e.value[0] != '{' {
			d.errorf(e.off, path, "want an object, got %s", kind(e.value))
			continue
		}
		s := &Story{fields: fields(d.data, e.off)}
		decodeObject(d, s, s.fields, storyKeys, path)
		s.orig = s.clone()
		stories = append(stories, s)
	}
	return stories
}

// decodeObject decodes the members of an object that keys knows into t.
func decodeObject[T any](d *decoder, t *T, fs []field, keys []key[T], path string) {
	seen := make(map[string]bool)
	for _, f := range fs {
		k := lookup(keys, f.key)
		if k == nil {
			continue
		}
		p := f.key
		if path != "" {
			p = path + "." + f.key
		}
		// encoding/json would let the last one win, silently; a human
		// editing prd.json more likely made a mistake.
		if seen[f.key] {
			d.errorf(f.off, p, "duplicate key")
			continue
		}
		seen[f.key] = true
		k.decode(d, t, f.value, f.off, p)
	}
}

// clone returns a copy of s that shares no memory with it.
func (s *Story) clone() *Story {
	c := *s
	c.AcceptanceCriteria = slices.Clone(s.AcceptanceCriteria)
	c.Checks = slices.Clone(s.Checks)
	c.DependsOn = slices.Clone(s.DependsOn)
	c.Answers = slices.Clone(s.Answers)
	c.fields, c.orig = nil, nil
	return &c
}

// The methods below decode one value each. null counts as absent, as it does
// for encoding/json.

func (d *decoder) string(v []byte, off int, path string) string {
	switch v[0] {
	case 'n':
		return ""
	case '"':
		var s string
		// v is a valid JSON string, so this cannot fail.
		_ = json.Unmarshal(v, &s)
		return s
	}
	d.errorf(off, path, "want a string, got %s", kind(v))
	return ""
}

func (d *decoder) strings(v []byte, off int, path string) []string {
	switch v[0] {
	case 'n':
		return nil
	case '[':
	default:
		d.errorf(off, path, "want an array, got %s", kind(v))
		return nil
	}
	ss := []string{}
	for i, e := range elements(d.data, off) {
		p := fmt.Sprintf("%s[%d]", path, i)
		if e.value[0] != '"' {
			d.errorf(e.off, p, "want a string, got %s", kind(e.value))
			continue
		}
		ss = append(ss, d.string(e.value, e.off, p))
	}
	return ss
}

// answers decodes the answers key: an array of {"question", "answer"}
// objects. Other members of an answer are ignored.
func (d *decoder) answers(v []byte, off int, path string) []Answer {
	switch v[0] {
	case 'n':
		return nil
	case '[':
	default:
		d.errorf(off, path, "want an array, got %s", kind(v))
		return nil
	}
	as := []Answer{}
	for i, e := range elements(d.data, off) {
		p := fmt.Sprintf("%s[%d]", path, i)
		if e.value[0] != '{' {
			d.errorf(e.off, p, "want an object with a question and an answer, got %s", kind(e.value))
			continue
		}
		var a Answer
		for _, f := range fields(d.data, e.off) {
			switch f.key {
			case "question":
				a.Question = d.string(f.value, f.off, p+".question")
			case "answer":
				a.Answer = d.string(f.value, f.off, p+".answer")
			}
		}
		as = append(as, a)
	}
	return as
}

// int decodes an integer; ok is false when the value is absent.
func (d *decoder) int(v []byte, off int, path string) (n int, ok bool) {
	switch kind(v) {
	case "null":
		return 0, false
	case "number":
	default:
		d.errorf(off, path, "want a number, got %s", kind(v))
		return 0, false
	}
	n, err := strconv.Atoi(string(v))
	if errors.Is(err, strconv.ErrRange) {
		d.errorf(off, path, "%s is out of range", v)
		return 0, false
	}
	if err != nil {
		d.errorf(off, path, "want an integer, got %s", v)
		return 0, false
	}
	return n, true
}

func (d *decoder) bool(v []byte, off int, path string) bool {
	switch kind(v) {
	case "null":
		return false
	case "boolean":
		return v[0] == 't'
	}
	d.errorf(off, path, "want a boolean, got %s", kind(v))
	return false
}

// failed decodes the failed key: the reason a story was given up. A boolean is
// accepted too, as hand-written files may have it: true reads as "failed".
func (d *decoder) failed(v []byte, off int, path string) string {
	switch kind(v) {
	case "null":
		return ""
	case "string":
		return d.string(v, off, path)
	case "boolean":
		if v[0] == 't' {
			return "failed"
		}
		return ""
	}
	d.errorf(off, path, "want a string or a boolean, got %s", kind(v))
	return ""
}
