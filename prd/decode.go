package prd

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// key is a member of a JSON object that this package knows: how to decode it
// into a T, and how to read it back for Marshal.
type key[T any] struct {
	name   string
	decode func(d *decoder, t *T, v []byte, off int)
	// get returns the value to write and whether to add the key when the
	// object lacks it. A nil value removes the key.
	get func(t *T) (v any, add bool)
}

// fileKeys are the top-level keys, in the order Marshal adds missing ones.
var fileKeys = []key[File]{
	{"project",
		func(d *decoder, f *File, v []byte, off int) { f.Project = d.string(v, off) },
		func(f *File) (any, bool) { return f.Project, f.Project != "" }},
	{"branchName",
		func(d *decoder, f *File, v []byte, off int) { f.BranchName = d.string(v, off) },
		func(f *File) (any, bool) { return f.BranchName, f.BranchName != "" }},
	{"description",
		func(d *decoder, f *File, v []byte, off int) { f.Description = d.string(v, off) },
		func(f *File) (any, bool) { return f.Description, f.Description != "" }},
	{"userStories",
		func(d *decoder, f *File, v []byte, off int) { f.Stories = d.stories(v, off) },
		func(f *File) (any, bool) { return storyList(f.Stories), true }},
}

// storyKeys are the keys of a story, in the order Marshal adds missing ones:
// the status keys come last, so a story that gains status keeps its look.
var storyKeys = []key[Story]{
	{"id",
		func(d *decoder, s *Story, v []byte, off int) { s.ID = d.string(v, off) },
		func(s *Story) (any, bool) { return s.ID, s.ID != "" }},
	{"title",
		func(d *decoder, s *Story, v []byte, off int) { s.Title = d.string(v, off) },
		func(s *Story) (any, bool) { return s.Title, s.Title != "" }},
	{"description",
		func(d *decoder, s *Story, v []byte, off int) { s.Description = d.string(v, off) },
		func(s *Story) (any, bool) { return s.Description, s.Description != "" }},
	{"acceptanceCriteria",
		func(d *decoder, s *Story, v []byte, off int) {
			s.AcceptanceCriteria = d.strings(v, off)
		},
		func(s *Story) (any, bool) { return s.AcceptanceCriteria, len(s.AcceptanceCriteria) > 0 }},
	{"priority",
		func(d *decoder, s *Story, v []byte, off int) {
			s.Priority, s.HasPriority = d.int(v, off)
		},
		func(s *Story) (any, bool) {
			if !s.HasPriority {
				return nil, false
			}
			return s.Priority, true
		}},
	{"notes",
		func(d *decoder, s *Story, v []byte, off int) { s.Notes = d.string(v, off) },
		func(s *Story) (any, bool) { return s.Notes, s.Notes != "" }},
	{"checks",
		func(d *decoder, s *Story, v []byte, off int) { s.Checks = d.strings(v, off) },
		func(s *Story) (any, bool) { return s.Checks, len(s.Checks) > 0 }},
	{"dependsOn",
		func(d *decoder, s *Story, v []byte, off int) { s.DependsOn = d.strings(v, off) },
		func(s *Story) (any, bool) { return s.DependsOn, len(s.DependsOn) > 0 }},
	{"passes",
		func(d *decoder, s *Story, v []byte, off int) { s.Passes = d.bool(v, off) },
		func(s *Story) (any, bool) { return s.Passes, s.Passes }},
	{"attempts",
		func(d *decoder, s *Story, v []byte, off int) { s.Attempts, _ = d.int(v, off) },
		func(s *Story) (any, bool) { return s.Attempts, s.Attempts != 0 }},
	{"blocked",
		func(d *decoder, s *Story, v []byte, off int) { s.Blocked = d.string(v, off) },
		func(s *Story) (any, bool) { return s.Blocked, s.Blocked != "" }},
	{"failed",
		func(d *decoder, s *Story, v []byte, off int) { s.Failed = d.failed(v, off) },
		func(s *Story) (any, bool) { return s.Failed, s.Failed != "" }},
	{"answers",
		func(d *decoder, s *Story, v []byte, off int) { s.Answers = d.answers(v, off) },
		func(s *Story) (any, bool) { return s.Answers, len(s.Answers) > 0 }},
}

// Parse decodes and validates the contents of a prd.json file. Messages name
// the file as name, usually the path as the user gave it. All problems are
// reported at once, one per line.
//
// The loop reads the same prd.json several times in an iteration (to pick a
// story, to guard the file, to record the verdict), so Parse remembers the
// last text it decoded without error, or that Save wrote: the same text
// again costs a copy of the stories, not a second parse. Remembering costs
// next to nothing, so that a command that reads the file once pays nothing
// for it.
func Parse(data []byte, name string) (*File, error) {
	f, _, err := parseText(data, name, false)
	return f, err
}

// parseText is Parse; owned says that the caller hands data over, and will
// not change it, so that the File may keep it without a copy. kept says
// whether it did.
func parseText(data []byte, name string, owned bool) (f *File, kept bool, err error) {
	if m := last.Load(); m != nil && isText(data, m.text) {
		if f := m.file(); f != nil {
			return f, false, nil
		}
	}
	f, err = parse(data, name, owned)
	if err != nil {
		return nil, false, err
	}
	last.Store(memoOf(f))
	return f, owned, nil
}

// last is what Parse remembers: the text it decoded last or Save wrote last.
var last atomic.Pointer[memo]

// memo is what a text decodes to, kept in a form no caller can change: the
// stories as parsed (their orig copies, which nothing changes) and where
// each is in the text. After Save, the stories it wrote changed, and the
// header, are left to decode from the text, on the first Parse of that
// text: a command that saves and exits never pays for it.
type memo struct {
	sync.Mutex
	text [][]byte // one piece when parsed; as Save wrote it, in pieces (see marshal)
	// buf is, after Save, Marshal's own part of the text, where members
	// are.
	buf []byte
	// header is the File without its stories; nil until the header of a
	// saved text is decoded.
	header *File
	// members are where a saved text's top-level members are.
	members []span
	stories []memoStory
}

// memoStory is one story of a memo: as parsed, and its text. Its text is
// laid out as Marshal writes it when the whole text is (header.canonical).
type memoStory struct {
	orig *Story // as parsed, raw unset; nil until decoded from raw
	raw  []byte
}

// memoOf remembers what f, just parsed and not yet changed, was parsed from.
func memoOf(f *File) *memo {
	h := *f
	h.Stories = nil
	m := &memo{text: f.text, header: &h, stories: make([]memoStory, len(f.Stories))}
	for i, s := range f.Stories {
		m.stories[i] = memoStory{orig: s.orig, raw: s.raw}
	}
	return m
}

// remember tells Parse that text, the pieces f was just saved as, decodes
// to what f holds. The stories that Marshal wrote as they were parsed are
// known; the others, and the header, are decoded from their text when
// Parse is first asked for it (complete).
func remember(text [][]byte, f *File, l *layout) {
	var m *memo
	if len(l.stories) == len(f.Stories) {
		m = &memo{text: text, buf: l.buf, members: l.members, stories: make([]memoStory, len(f.Stories))}
		for i, s := range f.Stories {
			sp := l.stories[i]
			m.stories[i] = memoStory{raw: sp.text}
			if sp.asParsed {
				m.stories[i].orig = s.orig
			}
		}
	}
	last.Store(m)
}

// file returns a File for m's text that shares nothing a caller can change
// with m, or nil when the text does not validate and must be parsed to say
// why.
func (m *memo) file() *File {
	m.Lock()
	defer m.Unlock()
	if m.header == nil && !m.complete() {
		return nil
	}
	f := *m.header
	n := 0
	for _, ms := range m.stories {
		o := ms.orig
		n += len(o.AcceptanceCriteria) + len(o.Checks) + len(o.DependsOn)
	}
	// The stories and their slices of strings are allocated together,
	// not one by one.
	slab := make([]string, n)
	cut := func(ss []string) []string {
		if ss == nil {
			return nil
		}
		c := slab[:len(ss):len(ss)]
		copy(c, ss)
		slab = slab[len(ss):]
		return c
	}
	live := make([]Story, len(m.stories))
	f.Stories = make([]*Story, len(m.stories))
	for i, ms := range m.stories {
		s := &live[i]
		*s = *ms.orig
		s.orig, s.raw, s.canonical = ms.orig, ms.raw, f.canonical
		s.AcceptanceCriteria = cut(s.AcceptanceCriteria)
		s.Checks = cut(s.Checks)
		s.DependsOn = cut(s.DependsOn)
		s.Answers = slices.Clone(s.Answers)
		f.Stories[i] = s
	}
	return &f
}

// complete decodes what Save left to decode of a saved text, the header
// and the stories it changed, and validates the whole, as a parse would.
// It reports whether the text is fit to hand out.
func (m *memo) complete() bool {
	h := &File{text: m.text, canonical: true}
	for _, sp := range m.members {
		fl := field{key: sp.key, rawKey: m.buf[sp.keyStart:sp.keyEnd:sp.keyEnd], off: sp.start}
		if sp.key == "userStories" {
			// Its stories are in pieces of their own; Marshal writes
			// them story by story.
			h.fields = append(h.fields, fl)
			continue
		}
		fl.value = m.buf[sp.start:sp.end:sp.end]
		h.fields = append(h.fields, fl)
		// A member of the header is decoded on its own.
		d := &decoder{text: newText(fl.value), name: "prd.json"}
		decodeObject(d, h, []field{{key: fl.key, value: fl.value}}, fileKeys)
		if len(d.errs) > 0 {
			return false
		}
	}
	h.orig = &File{Project: h.Project, BranchName: h.BranchName, Description: h.Description}
	for i := range m.stories {
		ms := &m.stories[i]
		if ms.orig != nil {
			continue
		}
		d := &decoder{text: newText(ms.raw), name: "prd.json"}
		o := new(Story)
		decodeObject(d, o, d.fields(0, nil), storyKeys)
		if len(d.errs) > 0 {
			return false
		}
		o.canonical = true
		ms.orig = o
	}
	// Validation reads the stories as parsed, and leaves the index of
	// their ids in h.
	h.Stories = make([]*Story, len(m.stories))
	for i, ms := range m.stories {
		h.Stories[i] = ms.orig
	}
	if h.validate("prd.json", true) != nil {
		return false
	}
	h.Stories = nil
	m.header = h
	return true
}

func parse(data []byte, name string, owned bool) (*File, error) {
	// The File keeps pieces of the text, so it gets a copy of its own that
	// nothing writes to (unless the caller handed data over): the decoded
	// strings are substrings of it, so a file of ten thousand stories costs
	// one allocation for its text, not one per string, and its raw pieces
	// are views of the same text.
	var src string
	if owned {
		src = unsafe.String(unsafe.SliceData(data), len(data))
	} else {
		src = string(data)
		data = unsafe.Slice(unsafe.StringData(src), len(src))
	}
	// The syntax is checked first, so that the walk below can trust it;
	// encoding/json has the last word on text scan turns down, and words
	// the error.
	opens, ends, canonical, ok := scan(data)
	if !ok && strings.HasPrefix(src, "\ufeff") {
		// As Windows editors write it; JSON leaves it out.
		return nil, fmt.Errorf("%s: starts with a byte order mark (U+FEFF): save it as UTF-8 without one", at(name, data, 0))
	}
	if !ok {
		var raw json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			var serr *json.SyntaxError
			if errors.As(err, &serr) {
				return nil, fmt.Errorf("%s: %w", at(name, data, syntaxOffset(data, serr)), serr)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	t := text{data: data, src: src, opens: opens, ends: ends, canonical: canonical, plain: isPlain(data)}
	d := &decoder{text: t, name: name}
	f := d.file(skipSpace(data, 0))
	if len(d.errs) > 0 {
		// The meaning is checked too, so that every problem is told at
		// once, unless the list of stories itself is of the wrong shape:
		// the stories' places would be wrong, and every message noise.
		if f != nil && !d.misshapen {
			if err := f.validateAround(name, d.hasStories, d.mistyped); err != nil {
				d.errs = append(d.errs, err)
			}
		}
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
	text
	name       string
	errs       []error
	hasStories bool // the file has a userStories member that is not null
	// misshapen says that an error is about the list of stories itself
	// (userStories is not an array, or one of its elements not an object);
	// mistyped holds the members of stories that had one.
	misshapen bool
	mistyped  map[member]bool
	// path is the JSON path of the value being decoded, for messages: it
	// is kept as a stack and spelt out only when there is an error.
	path []step
	// scratch holds the elements of an array of strings while it is
	// decoded, members the members of a story.
	scratch []element
	members []field
	// slab is where the slices of strings are cut from.
	slab []string
}

// step is a member name or an array index in a JSON path.
type step struct {
	key   string
	index int // when key is ""
}

func (d *decoder) push(key string) { d.path = append(d.path, step{key: key}) }
func (d *decoder) pushIndex(i int) { d.path = append(d.path, step{index: i}) }
func (d *decoder) pop()            { d.path = d.path[:len(d.path)-1] }

// pathString spells out the path, as in "userStories[0].acceptanceCriteria[1]".
func (d *decoder) pathString() string {
	var b strings.Builder
	for i, s := range d.path {
		switch {
		case s.key == "":
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case i > 0:
			b.WriteString("." + s.key)
		default:
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// member is a member of a story: the story's index and the member's key.
type member struct {
	story int
	key   string
}

// errorf records an error about the value at offset off, at the current path.
func (d *decoder) errorf(off int, format string, args ...any) {
	if len(d.path) > 0 && d.path[0].key == "userStories" {
		switch {
		case len(d.path) <= 2:
			d.misshapen = true
		default:
			if d.mistyped == nil {
				d.mistyped = map[member]bool{}
			}
			d.mistyped[member{d.path[1].index, d.path[2].key}] = true
		}
	}
	msg := fmt.Sprintf(format, args...)
	if path := d.pathString(); path != "" {
		msg = path + ": " + msg
	}
	d.errs = append(d.errs, fmt.Errorf("%s: %s", at(d.name, d.data, off), msg))
}

func (d *decoder) file(off int) *File {
	if d.data[off] != '{' {
		d.errorf(off, "want an object, got %s", kind(d.data[off:]))
		return nil
	}
	f := &File{fields: d.fields(off, nil), text: [][]byte{d.data}, canonical: d.canonical}
	decodeObject(d, f, f.fields, fileKeys)
	f.orig = &File{Project: f.Project, BranchName: f.BranchName, Description: f.Description}
	return f
}

func (d *decoder) stories(v []byte, off int) []*Story {
	if !d.array(v, off) {
		return nil
	}
	d.hasStories = true
	es := d.elements(off, nil)
	// The stories and the copies that tell what changed are allocated
	// together, not one by one: a file of thousands of stories is read
	// in every iteration.
	live := make([]Story, len(es))
	orig := make([]Story, len(es))
	stories := make([]*Story, 0, len(es))
	for i, e := range es {
		d.pushIndex(i)
		if e.value[0] != '{' {
			d.errorf(e.off, "want an object, got %s", kind(e.value))
			d.pop()
			continue
		}
		s := &live[i]
		s.raw, s.canonical = e.value, d.canonical
		d.members = d.fields(e.off, d.members[:0])
		decodeObject(d, s, d.members, storyKeys)
		o := &orig[i]
		*o = *s
		o.AcceptanceCriteria = d.clone(s.AcceptanceCriteria)
		o.Checks = d.clone(s.Checks)
		o.DependsOn = d.clone(s.DependsOn)
		o.Answers = slices.Clone(s.Answers)
		o.raw = nil
		s.orig = o
		stories = append(stories, s)
		d.pop()
	}
	return stories
}

// strs returns an empty slice with room for n strings, cut from a larger
// allocation that no other slice shares room with. The decoder of a whole
// file cuts them from blocks shared by many stories; one that decodes a
// single story (after Save, or a story added) allocates what it needs, as
// Parse may remember that story for as long as the loop runs.
func (d *decoder) strs(n int) []string {
	if n == 0 {
		return []string{}
	}
	if n > len(d.slab) {
		size := n
		if d.opens != nil { // a whole file, scanned
			size = max(n, 1024)
		}
		d.slab = make([]string, size)
	}
	s := d.slab[:0:n]
	d.slab = d.slab[n:]
	return s
}

// clone returns a copy of ss that shares no memory with it.
func (d *decoder) clone(ss []string) []string {
	if ss == nil {
		return nil
	}
	return append(d.strs(len(ss)), ss...)
}

// decodeObject decodes the members of an object that keys knows into t.
func decodeObject[T any](d *decoder, t *T, fs []field, keys []key[T]) {
	var seen uint64 // by index in keys
	for _, f := range fs {
		i := slices.IndexFunc(keys, func(k key[T]) bool { return k.name == f.key })
		if i < 0 {
			continue
		}
		d.push(f.key)
		// encoding/json would let the last one win, silently; a human
		// editing prd.json more likely made a mistake.
		if seen&(1<<i) != 0 {
			d.errorf(f.off, "duplicate key")
		} else {
			seen |= 1 << i
			keys[i].decode(d, t, f.value, f.off)
		}
		d.pop()
	}
}

// clone returns a copy of s that shares no memory with it.
func (s *Story) clone() *Story {
	c := *s
	c.AcceptanceCriteria = slices.Clone(s.AcceptanceCriteria)
	c.Checks = slices.Clone(s.Checks)
	c.DependsOn = slices.Clone(s.DependsOn)
	c.Answers = slices.Clone(s.Answers)
	c.orig, c.raw = nil, nil
	return &c
}

// array reports whether v is an array, recording an error unless it is an
// array or null (which counts as absent).
func (d *decoder) array(v []byte, off int) bool {
	switch v[0] {
	case '[':
		return true
	case 'n':
		return false
	}
	d.errorf(off, "want an array, got %s", kind(v))
	return false
}

// The methods below decode one value each. null counts as absent, as it does
// for encoding/json.

func (d *decoder) string(v []byte, off int) string {
	switch v[0] {
	case 'n':
		return ""
	case '"':
		return unquote(d.src, v, off, d.plain)
	}
	d.errorf(off, "want a string, got %s", kind(v))
	return ""
}

func (d *decoder) strings(v []byte, off int) []string {
	if !d.array(v, off) {
		return nil
	}
	d.scratch = d.elements(off, d.scratch[:0])
	ss := d.strs(len(d.scratch))
	for i, e := range d.scratch {
		if e.value[0] != '"' {
			d.pushIndex(i)
			d.errorf(e.off, "want a string, got %s", kind(e.value))
			d.pop()
			continue
		}
		ss = append(ss, unquote(d.src, e.value, e.off, d.plain))
	}
	return ss
}

// answers decodes the answers key: an array of {"question", "answer"}
// objects. Other members of an answer are ignored.
func (d *decoder) answers(v []byte, off int) []Answer {
	if !d.array(v, off) {
		return nil
	}
	as := []Answer{}
	for i, e := range d.elements(off, nil) {
		d.pushIndex(i)
		if e.value[0] != '{' {
			d.errorf(e.off, "want an object with a question and an answer, got %s", kind(e.value))
			d.pop()
			continue
		}
		var a Answer
		for _, f := range d.fields(e.off, nil) {
			switch f.key {
			case "question":
				d.push("question")
				a.Question = d.string(f.value, f.off)
				d.pop()
			case "answer":
				d.push("answer")
				a.Answer = d.string(f.value, f.off)
				d.pop()
			}
		}
		as = append(as, a)
		d.pop()
	}
	return as
}

// int decodes an integer; ok is false when the value is absent.
func (d *decoder) int(v []byte, off int) (n int, ok bool) {
	switch kind(v) {
	case "null":
		return 0, false
	case "number":
	default:
		d.errorf(off, "want a number, got %s", kind(v))
		return 0, false
	}
	n, err := strconv.Atoi(string(v))
	if errors.Is(err, strconv.ErrRange) {
		d.errorf(off, "%s is out of range", v)
		return 0, false
	}
	if err != nil {
		d.errorf(off, "want an integer, got %s", v)
		return 0, false
	}
	return n, true
}

func (d *decoder) bool(v []byte, off int) bool {
	switch kind(v) {
	case "null":
		return false
	case "boolean":
		return v[0] == 't'
	}
	d.errorf(off, "want a boolean, got %s", kind(v))
	return false
}

// failed decodes the failed key: the reason a story was given up. A boolean is
// accepted too, as hand-written files may have it: true reads as "failed".
func (d *decoder) failed(v []byte, off int) string {
	switch kind(v) {
	case "null":
		return ""
	case "string":
		return d.string(v, off)
	case "boolean":
		if v[0] == 't' {
			return "failed"
		}
		return ""
	}
	d.errorf(off, "want a string or a boolean, got %s", kind(v))
	return ""
}
