package prd

import (
	"bytes"
	"encoding/json"
	"slices"
	"unsafe"
)

// storyList is the value of the userStories key, written story by story.
type storyList []*Story

// Marshal encodes f as prd.json: keys in their original order, members this
// package does not know as they were, and each known field from f and its
// stories. A field that did not change keeps its original text, so a file in
// the canonical form (2-space indent, as json.MarshalIndent writes it) comes
// back byte for byte. Keys a story lacked are added at the end of it, only when
// their value is not zero. The output is indented with 2 spaces and ends with
// a newline.
//
// The output is what json.Indent makes of the members put together, written
// directly: a value copied from a file that was in the canonical form is
// already indented and is copied as it is, so saving a large file that
// ralph wrote before costs little more than copying it.
func (f *File) Marshal() ([]byte, error) {
	text, _ := f.marshal()
	return bytes.Join(text, nil), nil
}

// marshal is Marshal in pieces, saying where each top-level member and each
// story went. Each story's text is a piece of its own: the text it was
// parsed from when Marshal would write that as it is, so that saving a file
// of ten thousand stories after a change to one of them copies nothing of
// the others; its own small buffer otherwise, so that what Parse remembers
// of a story never keeps a whole earlier output alive.
func (f *File) marshal() (text [][]byte, l *layout) {
	// Nothing remembers the layout after ReadOnce: the stories may be
	// noted in runs (see note), usually a few.
	l = &layout{canonical: f.canonical, runs: readOnce.Load()}
	if !l.runs {
		l.stories = make([]storyAt, 0, len(f.Stories))
	}
	if len(f.text) == 1 {
		l.src = f.text[0]
	}
	b := make([]byte, 0, 4096)
	b = appendObject(b, f, f.orig, f.fields, fileKeys, 0, f.canonical, l)
	l.buf = append(b, '\n')
	text = make([][]byte, 0, 2*len(l.stories)+1)
	at := 0
	for _, sp := range l.stories {
		sep := l.buf[at:sp.start]
		at = sp.start
		// Stories written as they were parsed, one after another as in
		// the text, are one piece of it: a save after a change to one
		// story writes the stories before it, it and those after it as
		// three pieces, not one each.
		if n := len(text); n > 0 {
			if run, ok := joined(l.src, text[n-1], sep, sp.text, l.canonical); ok {
				text[n-1] = run
				continue
			}
		}
		text = append(text, sep, sp.text)
	}
	return append(text, l.buf[at:]), l
}

// joined returns the piece of src that is a, sep and b one after another,
// when a and b are pieces of src with sep between them there: stories, or
// runs of them, and what Marshal writes between two stories.
//
// When src is laid out as Marshal writes it (canonical), a story that
// starts as far after another as sep is long is the next one, with sep
// between them: that text is not read again, which at thousands of
// stories would be a miss of the cache for each.
func joined(src, a, sep, b []byte, canonical bool) ([]byte, bool) {
	i, ok := offsetIn(src, a)
	if !ok {
		return nil, false
	}
	j, ok := offsetIn(src, b)
	if !ok || j != i+len(a)+len(sep) || !canonical && !bytes.Equal(src[i+len(a):j], sep) {
		return nil, false
	}
	end := j + len(b)
	return src[i:end:end], true
}

// offsetIn returns where in src the piece p of it starts, if p is a piece
// of src that is not empty.
func offsetIn(src, p []byte) (int, bool) {
	if len(p) == 0 || len(src) == 0 {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(p))) - uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	if off > uintptr(len(src)) || uintptr(len(p)) > uintptr(len(src))-off {
		return 0, false
	}
	return int(off), true
}

// sameSlice reports whether a and b are the same slice of the same memory.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// layout is where Marshal put the parts of a File in its output.
type layout struct {
	// buf is what Marshal wrote but the stories: the members' offsets
	// are in buf.
	buf     []byte
	members []span    // the top-level members
	stories []storyAt // the stories, in order

	// src is the text the File was parsed from, when in one piece;
	// canonical, whether it is laid out as Marshal writes it.
	src       []byte
	canonical bool
	// runs: the stories may be noted in runs, not one by one (see note).
	runs bool
}

// note notes a story's text, whose place in the output is at the end of
// b, and returns b. When the layout is noted in runs, a story that follows
// the one noted last in src, with what Marshal wrote between them, joins
// it there and then (see joined), and what was written between them is
// taken back from b: a save of ten thousand stories after a change to one
// notes three runs, not ten thousand stories, each a piece of memory that
// is fresh in a brief command.
func (l *layout) note(b []byte, sa storyAt) []byte {
	if n := len(l.stories); l.runs && n > 0 {
		last := &l.stories[n-1]
		if run, ok := joined(l.src, last.text, b[last.start:], sa.text, l.canonical); ok {
			last.text, last.asParsed = run, last.asParsed && sa.asParsed
			return b[:last.start]
		}
	}
	l.stories = append(l.stories, sa)
	return b
}

// span is a member in Marshal's output: its key and its value in buf.
type span struct {
	key              string
	keyStart, keyEnd int
	start, end       int
}

// storyAt is a story in Marshal's output: where in buf its text goes, the
// text, and whether that is the story's text as it was parsed. A file has
// thousands of them, a header few members: it is a type of its own, half
// the size of a span.
type storyAt struct {
	start    int
	text     []byte
	asParsed bool
}

// appendObject appends t as an indented JSON object whose opening brace is at
// nesting depth depth, with the members fs it was parsed from, known keys
// taken from t where they differ from orig (all of them if orig is nil),
// then the known keys fs lacks. canonical says that the raw values in fs are
// indented already.
//
// When l is not nil, the members' places are noted in it.
func appendObject[T any](b []byte, t, orig *T, fs []field, keys []key[T], depth int, canonical bool, l *layout) []byte {
	n := 0
	member := func(k []byte) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = newline(b, depth+1)
		if l != nil {
			l.members = append(l.members, span{keyStart: len(b), keyEnd: len(b) + len(k), start: len(b) + len(k) + 2})
		}
		b = append(b, k...)
		b = append(b, ':', ' ')
	}
	// ended notes where the member just written ends.
	ended := func(key string) {
		if l != nil {
			m := &l.members[len(l.members)-1]
			m.key, m.end = key, len(b)
		}
	}
	b = append(b, '{')
	var seen uint64 // by index in keys
	for _, f := range fs {
		i := slices.IndexFunc(keys, func(k key[T]) bool { return k.name == f.key })
		if i < 0 {
			member(f.rawKey)
			b = appendRaw(b, f.value, depth+1, canonical)
			ended(f.key)
			continue
		}
		seen |= 1 << i
		k := &keys[i]
		v, _ := k.get(t)
		var was any
		if orig != nil {
			if was, _ = k.get(orig); same(v, was) {
				member(f.rawKey)
				b = appendRaw(b, f.value, depth+1, canonical)
				ended(f.key)
				continue
			}
		}
		if v != nil {
			member(f.rawKey)
			if grown, ok := appendAnswered(b, v, was, f.value, depth+1, canonical); ok {
				b = grown
			} else {
				b = appendValue(b, v, depth+1, l)
			}
			ended(f.key)
		}
	}
	for i, k := range keys {
		if v, add := k.get(t); add && seen&(1<<i) == 0 {
			member(encode(k.name))
			b = appendValue(b, v, depth+1, l)
			ended(k.name)
		}
	}
	if n > 0 {
		b = newline(b, depth)
	}
	return append(b, '}')
}

// appendStory writes s as an indented JSON object at nesting depth depth,
// a story that did not change as its text as parsed, and notes the text in
// l as the story's piece of the output, at the end of b (see marshal).
func appendStory(b []byte, s *Story, depth int, l *layout) []byte {
	unchanged := s.unchanged()
	var text []byte
	switch {
	case unchanged && s.canonical:
		text = s.raw
	case unchanged:
		text = appendRaw(nil, s.raw, depth, s.canonical)
	default:
		// The fields that did not change keep their text: the story as
		// parsed tells which, decoded again unless Parse remembers it.
		var fs []field
		orig := s.orig
		if s.raw != nil {
			fs = fieldsOf(s.raw)
			if orig == nil {
				orig, _ = parseStory(s.raw)
			}
		}
		text = appendObject(nil, s, orig, fs, storyKeys, depth, s.canonical, nil)
	}
	return l.note(b, storyAt{start: len(b), text: slices.Clip(text), asParsed: unchanged})
}

// unchanged reports whether no exported field of s differs from what was
// parsed, as its sum tells (see sum.go); Marshal would then write the
// members as they were, which is the story's own text.
func (s *Story) unchanged() bool {
	return s.raw != nil && sum(s, s.raw) == s.sum
}

// appendAnswered appends v, a story's answers, at nesting depth depth when
// they are the answers it was parsed with, was, and more after them (an
// answer recorded): the earlier ones as the text raw had them, with the
// members ralph does not know and their order, and the new ones after
// them. ok is false for any other value, which is written as it is.
func appendAnswered(b []byte, v, was any, raw []byte, depth int, canonical bool) (_ []byte, ok bool) {
	now, _ := v.([]Answer)
	before, _ := was.([]Answer)
	if len(before) == 0 || len(now) <= len(before) || !slices.Equal(now[:len(before)], before) {
		return b, false
	}
	old := elements(raw)
	if len(old) != len(before) {
		return b, false
	}
	return appendArray(b, len(now), depth, func(b []byte, i int) []byte {
		if i < len(old) {
			return appendRaw(b, old[i], depth+1, canonical)
		}
		return appendIndent(b, encode(now[i]), depth+1)
	}), true
}

// appendRaw appends a value as parsed, at nesting depth depth: as it is
// when its text is indented already, re-indented otherwise.
func appendRaw(b, v []byte, depth int, canonical bool) []byte {
	if canonical {
		return append(b, v...)
	}
	return appendIndent(b, v, depth)
}

// appendValue appends a value returned by a key's get at nesting depth depth,
// noting where the stories went in l: a list of stories needs one.
func appendValue(b []byte, v any, depth int, l *layout) []byte {
	stories, ok := v.(storyList)
	if !ok {
		return appendIndent(b, encode(v), depth)
	}
	return appendArray(b, len(stories), depth, func(b []byte, i int) []byte {
		return appendStory(b, stories[i], depth+1, l)
	})
}

// appendArray appends an indented JSON array of n elements at nesting
// depth depth, each appended by elem.
func appendArray(b []byte, n, depth int, elem func(b []byte, i int) []byte) []byte {
	if n == 0 {
		return append(b, '[', ']')
	}
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = newline(b, depth+1)
		b = elem(b, i)
	}
	b = newline(b, depth)
	return append(b, ']')
}

// newline starts a line indented for nesting depth depth.
func newline(b []byte, depth int) []byte {
	b = append(b, '\n')
	for range depth {
		b = append(b, ' ', ' ')
	}
	return b
}

// appendIndent appends the valid JSON value v, which starts at nesting depth
// depth, indented as json.Indent(dst, v, "", "  ") would indent it there:
// each member and element on a line of its own, empty objects and arrays
// as {} and [], a space after each colon, strings as they are.
func appendIndent(b, v []byte, depth int) []byte {
	pending := false // an object or array was opened: its first line is due
	for i := 0; i < len(v); {
		c := v[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		if pending && c != '}' && c != ']' {
			b = newline(b, depth)
			pending = false
		}
		switch c {
		case '"':
			end := stringEnd(v, i)
			b = append(b, v[i:end]...)
			i = end
		case '{', '[':
			b = append(b, c)
			depth++
			pending = true
			i++
		case '}', ']':
			depth--
			if pending {
				pending = false // empty
			} else {
				b = newline(b, depth)
			}
			b = append(b, c)
			i++
		case ',':
			b = append(b, ',')
			b = newline(b, depth)
			i++
		case ':':
			b = append(b, ':', ' ')
			i++
		default: // a number or a literal
			j := i
			for j < len(v) && !isDelim(v[j]) {
				j++
			}
			b = append(b, v[i:j]...)
			i = j
		}
	}
	return b
}

// same reports whether two values returned by a key's get are equal.
func same(a, b any) bool {
	switch a := a.(type) {
	case []string:
		b, ok := b.([]string)
		return ok && slices.Equal(a, b)
	case []Answer:
		b, ok := b.([]Answer)
		return ok && slices.Equal(a, b)
	case storyList:
		return false // always written story by story
	}
	return a == b
}

// encode encodes a value returned by a key's get, compactly. Unlike
// json.Marshal it leaves <, > and & alone: prd.json is read by people, not by
// browsers.
func encode(v any) []byte {
	switch v := v.(type) {
	case []string:
		if v == nil {
			v = []string{}
		}
		return encodeValue(v)
	case []Answer:
		if v == nil {
			v = []Answer{}
		}
		return encodeValue(v)
	}
	return encodeValue(v)
}

func encodeValue(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Strings, string slices, ints and bools always encode.
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
