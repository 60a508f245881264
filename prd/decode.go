package prd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ralph-harness/ralph/internal/huge"
	"github.com/ralph-harness/ralph/internal/textpos"
)

// key is a member of a JSON object that this package knows: how to decode it
// into a T, and how to read it back for Marshal.
type key[T any] struct {
	name string
	// decode decodes the value at the decoder's offset v into t, and
	// returns the offset just past it, or -1 when its syntax is bad.
	decode func(d *decoder, t *T, v int) int
	// get returns the value to write and whether to add the key when the
	// object lacks it. A nil value removes the key.
	get func(t *T) (v any, add bool)
}

// fileKeys are the top-level keys, in the order Marshal adds missing ones.
var fileKeys = []key[File]{
	{"project",
		func(d *decoder, f *File, v int) (end int) { f.Project, end = d.string(v); return end },
		func(f *File) (any, bool) { return f.Project, f.Project != "" }},
	{"branchName",
		func(d *decoder, f *File, v int) (end int) { f.BranchName, end = d.string(v); return end },
		func(f *File) (any, bool) { return f.BranchName, f.BranchName != "" }},
	{"description",
		func(d *decoder, f *File, v int) (end int) { f.Description, end = d.string(v); return end },
		func(f *File) (any, bool) { return f.Description, f.Description != "" }},
	{"userStories",
		func(d *decoder, f *File, v int) (end int) { f.Stories, end = d.stories(v); return end },
		func(f *File) (any, bool) { return storyList(f.Stories), true }},
}

// storyKeys are the keys of a story, in the order Marshal adds missing ones:
// the status keys come last, so a story that gains status keeps its look.
var storyKeys = []key[Story]{
	{"id",
		func(d *decoder, s *Story, v int) (end int) { s.ID, end = d.string(v); return end },
		func(s *Story) (any, bool) { return s.ID, s.ID != "" }},
	{"title",
		func(d *decoder, s *Story, v int) (end int) { s.Title, end = d.string(v); return end },
		func(s *Story) (any, bool) { return s.Title, s.Title != "" }},
	{"description",
		func(d *decoder, s *Story, v int) (end int) { s.Description, end = d.string(v); return end },
		func(s *Story) (any, bool) { return s.Description, s.Description != "" }},
	{"acceptanceCriteria",
		func(d *decoder, s *Story, v int) (end int) { s.AcceptanceCriteria, end = d.strings(v); return end },
		func(s *Story) (any, bool) { return s.AcceptanceCriteria, len(s.AcceptanceCriteria) > 0 }},
	{"priority",
		func(d *decoder, s *Story, v int) (end int) { s.Priority, s.HasPriority, end = d.int(v); return end },
		func(s *Story) (any, bool) {
			if !s.HasPriority {
				return nil, false
			}
			return s.Priority, true
		}},
	{"notes",
		func(d *decoder, s *Story, v int) (end int) { s.Notes, end = d.string(v); return end },
		func(s *Story) (any, bool) { return s.Notes, s.Notes != "" }},
	{"checks",
		func(d *decoder, s *Story, v int) (end int) { s.Checks, end = d.strings(v); return end },
		func(s *Story) (any, bool) { return s.Checks, len(s.Checks) > 0 }},
	{"dependsOn",
		func(d *decoder, s *Story, v int) (end int) { s.DependsOn, end = d.strings(v); return end },
		func(s *Story) (any, bool) { return s.DependsOn, len(s.DependsOn) > 0 }},
	{"passes",
		func(d *decoder, s *Story, v int) (end int) { s.Passes, end = d.bool(v); return end },
		func(s *Story) (any, bool) { return s.Passes, s.Passes }},
	{"attempts",
		func(d *decoder, s *Story, v int) (end int) { s.Attempts, _, end = d.int(v); return end },
		func(s *Story) (any, bool) { return s.Attempts, s.Attempts != 0 }},
	{"blocked",
		func(d *decoder, s *Story, v int) (end int) { s.Blocked, end = d.string(v); return end },
		func(s *Story) (any, bool) { return s.Blocked, s.Blocked != "" }},
	{"failed",
		func(d *decoder, s *Story, v int) (end int) { s.Failed, end = d.failed(v); return end },
		func(s *Story) (any, bool) { return s.Failed, s.Failed != "" }},
	{"answers",
		func(d *decoder, s *Story, v int) (end int) { s.Answers, end = d.answers(v); return end },
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
// a copy of the stories too, which a command that reads the file once
// never wins back: it calls ReadOnce.
func Parse(data []byte, name string) (*File, error) {
	f, _, err := parseText(data, name, false, nil)
	return f, err
}

// ParseReusing is Parse for a caller that parses the file again and
// again, as the loop does: old, the File it parsed last time, which it
// has not changed and is done with, gives its stories to the File
// returned where they are still as data has them, rather than have them
// copied anew. old may be nil.
func ParseReusing(data []byte, name string, old *File) (*File, error) {
	f, _, err := parseText(data, name, false, old)
	return f, err
}

// parseText is Parse; owned says that the caller hands data over, and will
// not change it, so that the File may keep it without a copy. kept says
// whether it did. old is ParseReusing's.
func parseText(data []byte, name string, owned bool, old *File) (f *File, kept bool, err error) {
	if m := last.Load(); m != nil && isText(data, m.text) {
		if f := m.file(old); f != nil {
			return f, false, nil
		}
	}
	f, err = parse(data, name, owned)
	if err != nil {
		return nil, false, err
	}
	if !readOnce.Load() {
		last.Store(memoOf(f))
	}
	return f, owned, nil
}

// last is what Parse remembers: the text it decoded last or Save wrote last.
var last atomic.Pointer[memo]

// readOnce is set by ReadOnce.
var readOnce atomic.Bool

// ReadOnce says that the process reads prd.json once, saves it at most
// once and exits, as ralph's brief commands do: Parse and Save then
// remember nothing. What Parse remembers costs a copy of every story,
// which only later reads of the same text win back.
func ReadOnce() {
	readOnce.Store(true)
	last.Store(nil)
}

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
	// ids is the index of the ids of a saved text known to validate (see
	// remember), which complete need not validate again; nil otherwise.
	ids *idIndex
}

// memoStory is one story of a memo: as parsed, its text, and its sum from
// that text. Its text is laid out as Marshal writes it when the whole text
// is (header.canonical).
type memoStory struct {
	orig *Story // as parsed, raw unset; nil until decoded from raw
	raw  []byte
	sum  uint64
}

// memoOf remembers what f, just parsed and not yet changed, was parsed
// from: a copy of its stories that no caller has, which each of f's
// stories points to as its orig.
func memoOf(f *File) *memo {
	h := *f
	h.Stories = nil
	m := &memo{text: f.text, header: &h, stories: make([]memoStory, len(f.Stories))}
	origs := copies(f.Stories)
	for i, s := range f.Stories {
		o := &origs[i]
		o.raw = nil
		s.orig = o
		m.stories[i] = memoStory{orig: o, raw: s.raw, sum: s.sum}
	}
	return m
}

// copies returns a copy of each of stories, which shares no memory with
// them but their strings and their text: the copies and their slices of
// strings are allocated together, not one by one.
func copies(stories []*Story) []Story {
	n := 0
	for _, s := range stories {
		n += len(s.AcceptanceCriteria) + len(s.Checks) + len(s.DependsOn)
	}
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
	c := make([]Story, len(stories))
	for i, s := range stories {
		c[i] = *s
		c[i].AcceptanceCriteria = cut(s.AcceptanceCriteria)
		c[i].Checks = cut(s.Checks)
		c[i].DependsOn = cut(s.DependsOn)
		c[i].Answers = slices.Clone(s.Answers)
	}
	return c
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
			ms := &m.stories[i]
			ms.raw = sp.text
			if sp.asParsed && s.orig != nil {
				// Its sum from the text it was parsed from holds for
				// the same text; a story whose text Marshal laid out
				// anew is summed from that.
				ms.orig, ms.sum = s.orig, s.sum
				if !sameSlice(sp.text, s.raw) {
					ms.sum = sum(s.orig, sp.text)
				}
			}
		}
		if prev := last.Load(); prev != nil {
			m.ids = prev.validAfter(f)
		}
	}
	last.Store(m)
}

// validAfter returns the index of the ids of m's text when it is known to
// validate, and f, read from that text, was changed only where validation
// does not look: then the text Save wrote of f validates too, with the
// same index. It returns nil otherwise. The loop saves a status in every
// iteration, and validating a file of thousands of stories again, on the
// next read of it, would cost more than all the rest of that read.
func (m *memo) validAfter(f *File) *idIndex {
	m.Lock()
	defer m.Unlock()
	ids := m.ids
	if m.header != nil {
		ids = m.header.ids
	}
	// Each story must be the one validated at its place, as the origs
	// that only m's text hands out tell, with the same id, title, checks
	// and dependencies, and attempts that are not negative (see
	// validateAround); the header, the same project.
	if ids == nil || f.orig == nil || f.Project != f.orig.Project || len(f.Stories) != len(m.stories) {
		return nil
	}
	for i, s := range f.Stories {
		o := s.orig
		if o == nil || o != m.stories[i].orig || s.ID != o.ID || s.Title != o.Title || s.Attempts < 0 ||
			!slices.Equal(s.Checks, o.Checks) || !slices.Equal(s.DependsOn, o.DependsOn) {
			return nil
		}
	}
	return ids
}

// file returns a File for m's text that shares nothing a caller can change
// with m, or nil when the text does not validate and must be parsed to say
// why. Its stories are copies of the ones as parsed, but for those of old
// (see ParseReusing) that are copies of the same at the same place: a
// story is only ever copied from its orig, and the caller did not change
// the copy, so it is taken over as it is.
func (m *memo) file(old *File) *File {
	m.Lock()
	defer m.Unlock()
	if m.header == nil && !m.complete() {
		return nil
	}
	f := *m.header
	f.Stories = make([]*Story, len(m.stories))
	// The stories as parsed that no story of old is a copy of, then
	// their copies.
	var origs []*Story
	for i, ms := range m.stories {
		if old != nil && i < len(old.Stories) && old.Stories[i].orig == ms.orig {
			f.Stories[i] = old.Stories[i]
		} else {
			origs = append(origs, ms.orig)
		}
	}
	live := copies(origs)
	for i, ms := range m.stories {
		s := f.Stories[i]
		if s == nil {
			s, live = &live[0], live[1:]
			f.Stories[i] = s
		}
		s.orig, s.raw, s.sum, s.canonical = ms.orig, ms.raw, ms.sum, f.canonical
	}
	return &f
}

// complete decodes what Save left to decode of a saved text, the header
// and the stories it changed, and validates the whole, as a parse would,
// unless remember knew it valid. It reports whether the text is fit to hand
// out.
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
		// A member of the header is decoded on its own. The text is
		// Marshal's, valid, and may nest as deep as encoding/json allows.
		d := &decoder{text: newText(fl.value), name: "prd.json", deep: true}
		var seen uint64
		if decodeMember(d, h, fl.key, 0, fileKeys, &seen) < 0 || len(d.errs) > 0 {
			return false
		}
	}
	h.orig = &File{Project: h.Project, BranchName: h.BranchName, Description: h.Description}
	for i := range m.stories {
		ms := &m.stories[i]
		if ms.orig != nil {
			continue
		}
		o, ok := parseStory(ms.raw)
		if !ok {
			return false
		}
		o.canonical = true
		ms.orig, ms.sum = o, sum(o, ms.raw)
	}
	h.ids = m.ids
	if h.ids == nil {
		// Validation reads the stories as parsed, and leaves the index
		// of their ids in h.
		h.Stories = make([]*Story, len(m.stories))
		for i, ms := range m.stories {
			h.Stories[i] = ms.orig
		}
		if h.validate("prd.json", true) != nil {
			return false
		}
		h.Stories = nil
	}
	m.header = h
	return true
}

// parse decodes and validates data, the text of the file called name;
// owned is parseText's.
func parse(data []byte, name string, owned bool) (*File, error) {
	f, d, err := decodeText(data, name, owned)
	if err != nil {
		return nil, err
	}
	if err := f.validateAround(name, d.hasStories, nil, d.problems, &d.hashes); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeText is parse but for the validation of a text decoded without
// error: it returns the File and the decoder that validation needs (see
// validateAround).
func decodeText(data []byte, name string, owned bool) (*File, *decoder, error) {
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
	t := text{data: data, src: src}
	d := &decoder{text: t, name: name, blocks: true}
	f, ok := d.file()
	if !ok && strings.HasPrefix(src, "\ufeff") {
		// As Windows editors write it; JSON leaves it out.
		return nil, nil, fmt.Errorf("%s: starts with a byte order mark (U+FEFF): save it as UTF-8 without one", textpos.At(name, data, 0))
	}
	if !ok {
		// encoding/json has the last word on text the decoder turns down,
		// and words the error; text it accepts nests deeper than the
		// decoder checks, and is decoded again without that limit.
		var raw json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			var serr *json.SyntaxError
			if errors.As(err, &serr) {
				return nil, nil, fmt.Errorf("%s: %w", textpos.At(name, data, syntaxOffset(data, serr)), serr)
			}
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		d = &decoder{text: t, name: name, blocks: true, deep: true}
		if f, ok = d.file(); !ok {
			return nil, nil, fmt.Errorf("%s: valid JSON that ralph cannot read: please report it", name)
		}
	}
	if len(d.errs) > 0 {
		// The meaning is checked too, so that every problem is told at
		// once, unless the list of stories itself is of the wrong shape:
		// the stories' places would be wrong, and every message noise.
		if f != nil && !d.misshapen {
			if err := f.validateAround(name, d.hasStories, d.mistyped, -1, nil); err != nil {
				d.errs = append(d.errs, err)
			}
		}
		return nil, nil, errors.Join(d.errs...)
	}
	return f, d, nil
}

// decoder turns the raw JSON of a prd.json into a File, collecting an error
// for every value of the wrong type, and checking the syntax on the way (see
// scan.go).
type decoder struct {
	text
	name string
	errs []error
	// canonical: the text read so far is laid out as Marshal writes it.
	canonical bool
	// deep: the text is valid JSON (encoding/json said so), and may nest
	// deeper than maxScanDepth.
	deep       bool
	hasStories bool // the file has a userStories member that is not null
	// misshapen says that an error is about the list of stories itself
	// (userStories is not an array, or one of its elements not an object);
	// mistyped holds the members of stories that had one.
	misshapen bool
	mistyped  map[member]bool
	// path is the JSON path of the value being decoded, for messages: it
	// is kept as a stack and spelt out only when there is an error. It has
	// a step for each object or array around the value, so its length is
	// the value's depth.
	path []step
	// scratch holds the strings of an array while it is decoded.
	scratch []string
	// blocks: a whole file is decoded, and its slices of strings are cut
	// from blocks shared by many stories (see strs).
	blocks bool
	slab   []string
	// block is the rest of the block stories are cut from (see newStory).
	block []Story
	// A decoder of a chunk of a list of stories (see chunked) stops at
	// the story that ends at limit, and gives up when stop is set; share
	// is how much of the list it may decode, for its first block of
	// stories (see newStory).
	limit int
	stop  *atomic.Bool
	share int
	// problems counts the problems the stories decoded have on their own
	// (see storyProblems), as each is decoded: its text is at hand then,
	// where validate would read it again from memory. hashes are the
	// hashes of their ids, taken then for the same reason.
	problems int
	hashes   idHashes
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
	d.errs = append(d.errs, fmt.Errorf("%s: %s", textpos.At(d.name, d.data, off), msg))
}

// file decodes the whole text. ok is false when its syntax is bad, or it
// nests deeper than the decoder checks (see scan.go).
func (d *decoder) file() (f *File, ok bool) {
	data := d.data
	i := skipSpace(data, 0)
	if i == len(data) {
		return nil, false
	}
	d.canonical = i == 0
	var end int
	if data[i] == '{' {
		f = &File{text: [][]byte{data}}
		end = object(d, f, i, fileKeys, &f.fields)
		f.orig = &File{Project: f.Project, BranchName: f.BranchName, Description: f.Description}
	} else {
		d.errorf(i, "want an object, got %s", kind(data[i:]))
		end = d.skip(i, 0)
	}
	if end < 0 || skipSpace(data, end) != len(data) {
		return nil, false
	}
	// Whether the text is laid out as Marshal writes it is known only
	// now that all of it was read.
	if f != nil && d.canonical {
		f.canonical = true
		for _, s := range f.Stories {
			s.canonical = true
		}
	}
	return f, true
}

// object decodes the object at data[i] into t, the members that keys knows,
// and returns the offset just past it. When fs is not nil, the members are
// appended to it.
func object[T any](d *decoder, t *T, i int, keys []key[T], fs *[]field) int {
	depth := len(d.path)
	var seen uint64 // by index in keys
	j, more := d.open(i, depth)
	for more {
		k, keyEnd, v := d.key(j)
		if v < 0 {
			return -1
		}
		end := decodeMember(d, t, k, v, keys, &seen)
		if end < 0 {
			return -1
		}
		if fs != nil {
			// Full slice expressions: nothing appended to a piece can
			// write into the text.
			*fs = append(*fs, field{key: k, rawKey: d.data[j:keyEnd:keyEnd], value: d.data[v:end:end], off: v})
		}
		j, more = d.after(end, depth, '}')
	}
	return j
}

// decodeMember decodes the value at data[v] of the member name into t, if
// keys knows it, and returns the offset just past it. seen holds the keys
// of the object decoded so far, by index in keys.
func decodeMember[T any](d *decoder, t *T, name string, v int, keys []key[T], seen *uint64) int {
	i := 0
	for i < len(keys) && keys[i].name != name {
		i++
	}
	if i == len(keys) {
		return d.skip(v, len(d.path)+1)
	}
	d.push(name)
	var end int
	// encoding/json would let the last one win, silently; a human
	// editing prd.json more likely made a mistake.
	if *seen&(1<<i) != 0 {
		d.errorf(v, "duplicate key")
		end = d.skipHere(v)
	} else {
		*seen |= 1 << i
		end = keys[i].decode(d, t, v)
	}
	d.pop()
	return end
}

// skipHere checks the value at data[v], at the current path, and returns
// the offset just past it.
func (d *decoder) skipHere(v int) int { return d.skip(v, len(d.path)) }

// stories decodes the list of stories at data[v]. A long list is decoded
// in chunks, by as many goroutines at once as the machine has CPUs (see
// chunked).
func (d *decoder) stories(v int) ([]*Story, int) {
	if !d.array(v) {
		return nil, d.skipHere(v)
	}
	d.hasStories = true
	depth := len(d.path)
	j, more := d.open(v, depth)
	if !more {
		return nil, j
	}
	if d.blocks && !d.deep {
		if stories, end, ok := d.chunked(j, depth); ok {
			return stories, end
		}
	}
	return d.storiesFrom(j, depth)
}

// storiesFrom decodes the stories of a list from its element at data[j],
// at the list's depth, to the list's end; a decoder of a chunk (see
// chunked) stops at the story that ends at its limit.
func (d *decoder) storiesFrom(j, depth int) ([]*Story, int) {
	data := d.data
	var stories []*Story
	// The text of the stories to decode is from..to, as far as is known.
	from, to := j, len(data)
	if d.limit > 0 {
		to = d.limit
	}
	count := func(string, ...any) { d.problems++ }
	for n, more := 0, true; more; n++ {
		if d.stop != nil && d.stop.Load() {
			return nil, -1
		}
		d.pushIndex(n)
		var end int
		if data[j] != '{' {
			d.errorf(j, "want an object, got %s", kind(data[j:]))
			end = d.skipHere(j)
		} else {
			s := d.newStory(len(stories), j-from, to-j)
			end = object(d, s, j, storyKeys, nil)
			if end >= 0 {
				s.raw = data[j:end:end]
				s.sum = sum(s, s.raw)
				storyProblems(s, n, nil, nil, nil, unnamed, count)
				d.hashes.take(s)
				stories = append(stories, s)
			}
		}
		d.pop()
		if end < 0 {
			return nil, -1
		}
		if d.limit > 0 && end >= d.limit {
			if end > d.limit {
				// The limit was no story's end.
				return nil, -1
			}
			return stories, end
		}
		j, more = d.after(end, depth, ']')
	}
	return stories, j
}

// splitMin is the length of text past which a list of stories is decoded
// in chunks: below it, starting goroutines costs more than it saves.
// Tests lower it.
var splitMin = 256 << 10

// chunksPerCPU is how many chunks a long list of stories is cut into for
// each CPU that decodes them. The CPUs of a virtual machine do not go at
// the same pace (one is slower for a while, or its fresh memory comes
// cold): with chunks handed out one at a time, the slower CPU decodes
// fewer of them, and the faster waits at most for one at the end.
const chunksPerCPU = 8

// storySeparator is what Marshal writes between two stories. A raw line
// break is never part of a JSON string, so where it is found, a value ends
// and the next begins: two stories, unless the text is laid out otherwise,
// which the decoder of the chunk before finds out when it reads past the
// place without a story ending there.
const storySeparator = "\n    },\n    {"

// chunk is a part of a long list of stories: from the story at data[start]
// to the one that ends at limit, or to the list's end (limit 0).
type chunk struct {
	start, limit int
	d            *decoder
	stories      []*Story
	end          int // where its decoder stopped: at limit, or past the list's end; -1 on an error
}

// chunked decodes the list of stories whose first element is at data[j],
// at depth, in chunks, when it is long and the machine has more than one
// CPU: the caller's goroutine and one more for each other CPU take the
// chunks one after another, each with a decoder of its own. It returns
// what one decoder alone would, with ok true, when every chunk ended where
// it should and none of them found an error; otherwise ok is false, and
// the caller's decoder decodes the list alone, so that the errors are
// those of one decoder, where they are.
func (d *decoder) chunked(j, depth int) (stories []*Story, end int, ok bool) {
	cpus := runtime.GOMAXPROCS(0)
	if len(d.data)-j < splitMin || cpus < 2 {
		return nil, 0, false
	}
	w := &chunkWork{d: d, depth: depth, cs: d.chunks(j, cpus*chunksPerCPU)}
	if len(w.cs) < 2 {
		return nil, 0, false
	}
	helpers := min(cpus, len(w.cs)) - 1
	share := (len(d.data) - j) / (helpers + 1)
	var wg sync.WaitGroup
	help := func() {
		for range helpers {
			wg.Go(func() { w.decode(share, nil) })
		}
	}
	if lateSecond {
		w.decode(share, help)
	} else {
		help()
		w.decode(share, nil)
	}
	wg.Wait()
	if w.failed.Load() {
		return nil, 0, false
	}
	n := 0
	for _, c := range w.cs {
		n += len(c.stories)
	}
	stories = make([]*Story, 0, n)
	for _, c := range w.cs {
		stories = append(stories, c.stories...)
		d.merge(c.d)
	}
	return stories, w.cs[len(w.cs)-1].end, true
}

// chunkWork hands the chunks of a list of stories out, one at a time and
// in order, to the goroutines that decode them (see chunked).
type chunkWork struct {
	d      *decoder // the list's decoder
	depth  int
	cs     []chunk
	next   atomic.Int64 // the next chunk to take
	failed atomic.Bool  // a chunk failed: the others are not needed
}

// decode has the calling goroutine decode chunks until none is left, or
// one has failed. share is how much of the list's text it may decode, for
// the first block of stories its decoders cut (see newStory); they cut
// the next ones from what that block has left. started, when not nil, is
// called once it has decoded its first chunk.
func (w *chunkWork) decode(share int, started func()) {
	var (
		block []Story
		slab  []string
	)
	for {
		i := int(w.next.Add(1)) - 1
		if i >= len(w.cs) || w.failed.Load() {
			return
		}
		c := &w.cs[i]
		c.d = w.d.partDecoder()
		c.d.limit, c.d.stop, c.d.share = c.limit, &w.failed, share
		c.d.block, c.d.slab = block, slab
		c.stories, c.end = c.d.storiesFrom(c.start, w.depth)
		block, slab, share = c.d.block, c.d.slab, 0
		if c.end < 0 || len(c.d.errs) > 0 || (c.limit > 0 && c.end != c.limit) {
			w.failed.Store(true)
		}
		if started != nil {
			started()
			started = nil
		}
	}
}

// chunks cuts the list of stories whose first element is at data[j] into
// chunks of about (len(data)-j)/n bytes or more, at the ends of stories
// as Marshal lays them out (see storyEnd): fewer when the text has fewer
// such places.
func (d *decoder) chunks(j, n int) []chunk {
	size := max((len(d.data)-j)/n, 1)
	cs := []chunk{{start: j}}
	for from := j + size; from < len(d.data); {
		at, next, ok := d.storyEnd(from)
		if !ok {
			break
		}
		cs[len(cs)-1].limit = at
		cs = append(cs, chunk{start: next})
		from = next + size
	}
	return cs
}

// storyEnd returns where the first story that ends at data[from] or
// after ends, as Marshal lays a list of stories out (see storySeparator),
// and where the next one begins; ok is false when there is no such place.
func (d *decoder) storyEnd(from int) (at, next int, ok bool) {
	i := bytes.Index(d.data[from:], []byte(storySeparator))
	if i < 0 {
		return 0, 0, false
	}
	return from + i + len("\n    }"), from + i + len(storySeparator) - 1, true
}

// partDecoder returns a decoder for a part of the list of stories d is
// decoding, at the same place in the file.
func (d *decoder) partDecoder() *decoder {
	return &decoder{text: d.text, name: d.name, blocks: true, canonical: true, path: slices.Clone(d.path)}
}

// merge takes over what the decoder of a later part of the list of
// stories found: whether its text is laid out as Marshal writes it, the
// problems its stories have on their own, and the hashes of their ids.
func (d *decoder) merge(part *decoder) {
	d.canonical = d.canonical && part.canonical
	d.problems += part.problems
	d.hashes.join(&part.hashes)
}

// lateSecond, set by tests, has the other goroutines that decode the
// chunks of a list start only once the caller's has decoded its first:
// the caller's then decodes more than its share.
var lateSecond bool

// newStory returns a story to decode into, when n stories were decoded
// before from read bytes of text, and some left bytes are still to read.
// Stories are cut from blocks, not allocated one by one: a file of
// thousands of stories is read in every iteration.
func (d *decoder) newStory(n, read, left int) *Story {
	if len(d.block) == 0 {
		d.block = storyBlock(n, read, max(left, d.share))
	}
	s := &d.block[0]
	d.block = d.block[1:]
	return s
}

// pageOfStories is the fewest stories that fill a huge page.
const pageOfStories = (huge.Page + storySize - 1) / storySize

const storySize = int(unsafe.Sizeof(Story{}))

// storyBlock returns a block of stories to cut from, as newStory says.
// Blocks grow with the list, up to a size that wastes little. A command
// that reads the file once (ReadOnce) takes the stories the rest of a
// long list should need from huge pages (see huge.Make): its heap is
// fresh, and the stories of ten thousand take 700 pages of 4 kB, each a
// fault that costs more than the decode of a story on a virtual machine.
// Half a huge page of stories is worth one.
func storyBlock(n, read, left int) []Story {
	if readOnce.Load() && read > 0 {
		if rest := int(int64(left) * int64(n) / int64(read)); rest >= pageOfStories/2 {
			b := huge.Make[Story](max(rest, pageOfStories))
			return b[:cap(b)]
		}
	}
	return make([]Story, min(max(n, 16), 1024))
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
		if d.blocks {
			size = max(n, 1024)
		}
		d.slab = make([]string, size)
	}
	s := d.slab[:0:n]
	d.slab = d.slab[n:]
	return s
}

// parseStory decodes a story's text: as a file had it, or as Marshal wrote
// it. ok is false when a member is of the wrong type. The text must be
// valid JSON, and may nest as deep as encoding/json allows.
func parseStory(raw []byte) (s *Story, ok bool) {
	d := &decoder{text: newText(raw), name: "prd.json", deep: true}
	s = new(Story)
	return s, object(d, s, 0, storyKeys, nil) >= 0 && len(d.errs) == 0
}

// array reports whether the value at data[v] is an array, recording an
// error unless it is an array or null (which counts as absent).
func (d *decoder) array(v int) bool {
	switch d.data[v] {
	case '[':
		return true
	case 'n':
		return false
	}
	d.errorf(v, "want an array, got %s", kind(d.data[v:]))
	return false
}

// The methods below decode the value at data[v], and return it and the
// offset just past it. null counts as absent, as it does for encoding/json.

func (d *decoder) string(v int) (string, int) {
	data := d.data
	switch data[v] {
	case 'n':
		return "", d.skipHere(v)
	case '"':
		return d.str(v)
	}
	d.errorf(v, "want a string, got %s", kind(data[v:]))
	return "", d.skipHere(v)
}

func (d *decoder) strings(v int) ([]string, int) {
	if !d.array(v) {
		return nil, d.skipHere(v)
	}
	data := d.data
	depth := len(d.path)
	d.scratch = d.scratch[:0]
	j, more := d.open(v, depth)
	for n := 0; more; n++ {
		var end int
		if data[j] == '"' {
			var s string
			if s, end = d.str(j); end < 0 {
				return nil, -1
			}
			d.scratch = append(d.scratch, s)
		} else {
			d.pushIndex(n)
			d.errorf(j, "want a string, got %s", kind(data[j:]))
			end = d.skipHere(j)
			d.pop()
		}
		if end < 0 {
			return nil, -1
		}
		j, more = d.after(end, depth, ']')
	}
	return append(d.strs(len(d.scratch)), d.scratch...), j
}

// answers decodes the answers key: an array of {"question", "answer"}
// objects. Other members of an answer are ignored (and kept: see
// appendAnswered).
func (d *decoder) answers(v int) ([]Answer, int) {
	if !d.array(v) {
		return nil, d.skipHere(v)
	}
	data := d.data
	depth := len(d.path)
	as := []Answer{}
	j, more := d.open(v, depth)
	for n := 0; more; n++ {
		d.pushIndex(n)
		var end int
		if data[j] != '{' {
			d.errorf(j, "want an object with a question and an answer, got %s", kind(data[j:]))
			end = d.skipHere(j)
		} else {
			var a Answer
			end = object(d, &a, j, answerKeys, nil)
			as = append(as, a)
		}
		d.pop()
		if end < 0 {
			return nil, -1
		}
		j, more = d.after(end, depth, ']')
	}
	return as, j
}

// answerKeys are the members of an answer that ralph knows: decoded by
// object, as a story's are, a second one of them is an error.
var answerKeys = []key[Answer]{
	{"question",
		func(d *decoder, a *Answer, v int) (end int) { a.Question, end = d.string(v); return end },
		func(a *Answer) (any, bool) { return a.Question, true }},
	{"answer",
		func(d *decoder, a *Answer, v int) (end int) { a.Answer, end = d.string(v); return end },
		func(a *Answer) (any, bool) { return a.Answer, true }},
}

// int decodes an integer; ok is false when the value is absent.
func (d *decoder) int(v int) (n int, ok bool, end int) {
	data := d.data
	switch kind(data[v:]) {
	case "null":
		return 0, false, d.skipHere(v)
	case "number":
	default:
		d.errorf(v, "want a number, got %s", kind(data[v:]))
		return 0, false, d.skipHere(v)
	}
	if end = scanNumber(data, v); end < 0 {
		return 0, false, -1
	}
	num := data[v:end]
	n, err := strconv.Atoi(string(num))
	if errors.Is(err, strconv.ErrRange) {
		d.errorf(v, "%s is out of range", num)
		return 0, false, end
	}
	if err != nil {
		d.errorf(v, "want an integer, got %s", num)
		return 0, false, end
	}
	return n, true, end
}

func (d *decoder) bool(v int) (bool, int) {
	data := d.data
	switch kind(data[v:]) {
	case "null":
		return false, d.skipHere(v)
	case "boolean":
		return data[v] == 't', d.skipHere(v)
	}
	d.errorf(v, "want a boolean, got %s", kind(data[v:]))
	return false, d.skipHere(v)
}

// failed decodes the failed key: the reason a story was given up. A boolean is
// accepted too, as hand-written files may have it: true reads as "failed".
func (d *decoder) failed(v int) (string, int) {
	data := d.data
	switch kind(data[v:]) {
	case "null":
		return "", d.skipHere(v)
	case "string":
		return d.string(v)
	case "boolean":
		if data[v] == 't' {
			return "failed", d.skipHere(v)
		}
		return "", d.skipHere(v)
	}
	d.errorf(v, "want a string or a boolean, got %s", kind(data[v:]))
	return "", d.skipHere(v)
}
