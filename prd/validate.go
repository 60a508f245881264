package prd

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ralph-harness/ralph/internal/textcut"
)

// validate checks what the types alone cannot: ids, titles, dependencies,
// counts. listed tells whether the file has a userStories array at all. Every
// problem is reported, one error each, prefixed by name.
//
// It looks each id and each dependency up once: a file of ten thousand
// stories is validated whenever it is read.
func (f *File) validate(name string, listed bool) error {
	return f.validateAround(name, listed, nil, -1, nil)
}

// validateAround is validate for a file whose stories' members in mistyped
// were of the wrong type (and read as absent): what they would say about
// those members is left out, as the type errors say it already. A story
// whose id is one of them might be the one another story depends on, so no
// dependency is called unknown then. counted is the number of problems
// the stories have on their own when the decoder counted them (see
// storiesFrom), or -1; hashes are the hashes of the ids the decoder took,
// or nil.
func (f *File) validateAround(name string, listed bool, mistyped map[member]bool, counted int, hashes *idHashes) error {
	c, errs := f.checkIDs(name, listed, mistyped, counted, hashes)
	errs = append(errs, c.checkDeps()...)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	f.ids = c.first
	return nil
}

// idCheck is what checkIDs found of a file's ids, for checkDeps.
type idCheck struct {
	name     string // the file's, for messages
	stories  []*Story
	mistyped map[member]bool
	hashes   *idHashes
	// first is the index of the first story with each id; dups holds the
	// ids more than one story has, usually none.
	first *idIndex
	dups  map[string]bool
}

// errorf returns a problem of the file, prefixed by its name.
func (c *idCheck) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", c.name, fmt.Sprintf(format, args...))
}

// storyName names the i-th story in messages: by its id when that is
// unique (see the function storyName).
func (c *idCheck) storyName(i int) string {
	if c.dups[c.stories[i].ID] {
		return fmt.Sprintf("userStories[%d]", i)
	}
	return storyName(c.stories, i)
}

// checkIDs is the first part of validateAround: everything but the
// dependencies, which checkDeps checks with what it returns. It reads
// the stories' ids and dependencies, and every member of a story only
// when some story has a problem.
func (f *File) checkIDs(name string, listed bool, mistyped map[member]bool, counted int, hashes *idHashes) (*idCheck, []error) {
	c := &idCheck{name: name, stories: f.Stories, mistyped: mistyped, hashes: hashes}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, c.errorf(format, args...)) }
	// An empty list is a file to add stories to (`ralph task add`); the
	// loop says there is nothing to do.
	if !listed {
		add("missing userStories array")
	}
	if r, ok := ControlIn(f.Project); ok {
		add("project: %U is a control character: a project's name is a line of plain text", r)
	}

	// The index is built from the hashes the decoder took when it has
	// them (see idIndex). Meanwhile the problems each story has on its
	// own are counted, unless the decoder did, by another goroutine when
	// there are many stories and a second CPU: a file read is usually
	// fine, and its stories are told about only when there are some.
	if c.hashes == nil {
		c.hashes = &idHashes{}
		for _, s := range f.Stories {
			c.hashes.take(s)
		}
	}
	c.first = newIDIndex(len(f.Stories))
	problems := 0
	done := make(chan struct{})
	countProblems := func() {
		count := func(string, ...any) { problems++ }
		for i, s := range f.Stories {
			storyProblems(s, i, mistyped, nil, nil, func(i int) string { return storyName(f.Stories, i) }, count)
		}
		close(done)
	}
	switch {
	case counted >= 0:
		problems = counted
		close(done)
	case len(f.Stories) >= countApart && runtime.GOMAXPROCS(0) > 1:
		go countProblems()
	default:
		countProblems()
	}
	for i, s := range f.Stories {
		if s.ID == "" {
			continue
		}
		if _, added := c.first.add(s.idHash, i, f.Stories); !added {
			if c.dups == nil {
				c.dups = map[string]bool{}
			}
			c.dups[s.ID] = true
		}
	}
	<-done
	firstOf := func(i int) int {
		j, _ := c.first.lookup(f.Stories[i].idHash, f.Stories[i].ID, f.Stories)
		return j
	}
	// The problems are told, with the stories' names, only when there
	// are some.
	if problems > 0 || c.dups != nil {
		for i, s := range f.Stories {
			storyProblems(s, i, mistyped, c.dups, firstOf, c.storyName, add)
		}
	}
	return c, errs
}

// checkDeps is the rest of validateAround after checkIDs: the stories'
// dependencies, and their cycles. It reads the stories' ids and
// dependencies only, so that it may run while another goroutine changes
// the stories' other members (see UpdateStories).
func (c *idCheck) checkDeps() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, c.errorf(format, args...)) }
	// deps holds, story after story, the indexes of the stories each
	// depends on (leaving out unknown ids and the story itself, reported
	// here); story i's are deps[ends[i-1]:ends[i]].
	var deps []int
	ends := make([]int, len(c.stories))
	idsKnown := true
	for m := range c.mistyped {
		idsKnown = idsKnown && m.key != "id"
	}
	k := 0 // the next dependency's place in hashes.deps
	for i, s := range c.stories {
		start := len(deps)
		for _, id := range s.DependsOn {
			h := c.hashes.deps[k]
			k++
			switch j, known := c.first.lookup(h, id, c.stories); {
			case !known && !idsKnown:
			case !known:
				add("%s: dependsOn names unknown story %q", c.storyName(i), id)
			case id == s.ID:
				add("%s: dependsOn names the story itself", c.storyName(i))
			case slices.Contains(deps[start:], j):
				// Named twice: one way to it, or each cycle would be
				// told twice.
			default:
				deps = append(deps, j)
			}
		}
		ends[i] = len(deps)
	}
	for _, cycle := range cycles(c.stories, deps, ends, c.storyName) {
		add("dependsOn cycle: %s", strings.Join(cycle, " -> "))
	}
	return errs
}

// countApart is the number of stories from which validate counts their
// problems in a goroutine of its own, while it indexes their ids. Tests
// lower it.
var countApart = 1000

// storyProblems calls add for each problem s, the i-th story, has on its
// own, naming it by name: its id, its title, its attempts, its checks. Its
// members in mistyped were of the wrong type (see validateAround); dups
// holds the ids more than one story has, and first gives the index of the
// first story with the i-th story's id.
func storyProblems(s *Story, i int, mistyped map[member]bool, dups map[string]bool, first func(int) int, name func(int) string, add func(format string, args ...any)) {
	idErr := CheckID(s.ID)
	switch {
	case s.ID == "" && mistyped[member{i, "id"}]:
	case s.ID == "":
		add("%s: missing id", name(i))
	case idErr != nil:
		add("userStories[%d]: id %q: %v", i, textcut.Head(s.ID, MaxID, "…"), idErr)
	case dups[s.ID] && first(i) != i:
		add("userStories[%d]: duplicate id %q (first at userStories[%d])", i, s.ID, first(i))
	}
	if s.Title == "" && !mistyped[member{i, "title"}] {
		add("%s: missing title", name(i))
	}
	// A title is shown on people's terminals (status, task list, the
	// loop's narration): an escape in it would drive the terminal.
	if r, ok := ControlIn(s.Title); ok {
		add("%s: title: %U is a control character: a title is a line of plain text", name(i), r)
	}
	// So is a blocked story's question (status, next, task list).
	if r, ok := ControlIn(s.Blocked); ok {
		add("%s: blocked: %U is a control character: a question is a line of plain text", name(i), r)
	}
	if s.Attempts < 0 {
		add("%s: attempts: want 0 or more, got %d", name(i), s.Attempts)
	}
	// A check of the wrong type was left out of the list: the others'
	// places in it are not the file's, and go unchecked.
	checks := s.Checks
	if mistyped[member{i, "checks"}] {
		checks = nil
	}
	for j, c := range checks {
		switch {
		case strings.TrimSpace(c) == "":
			add("%s: checks[%d] is empty", name(i), j)
		case strings.ContainsRune(c, 0):
			// A command ends at a NUL: the check could never run,
			// and the story would spend its attempts on it.
			add("%s: checks[%d]: %q: a NUL byte cannot be passed to a program", name(i), j, c)
		case slices.Index(checks, c) < j:
			// A story's check is named after its command: two of one
			// command would share a name, and a test count.
			add("%s: checks[%d] repeats checks[%d]", name(i), j, slices.Index(checks, c))
		}
	}
}

// cycles returns the dependency cycles among the stories, each as the
// stories along it, named by name, with the first repeated at the end. deps
// and ends are the stories' dependencies as validate lists them.
func cycles(stories []*Story, deps, ends []int, name func(int) string) [][]string {
	const (
		unseen = iota
		onPath
		finished
	)
	state := make([]int8, len(stories))
	var path []int // indexes of the stories on the current path
	var found [][]string
	var visit func(i int)
	visit = func(i int) {
		state[i] = onPath
		path = append(path, i)
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		for _, j := range deps[start:ends[i]] {
			switch state[j] {
			case unseen:
				visit(j)
			case onPath:
				var ids []string
				for _, k := range path[slices.Index(path, j):] {
					ids = append(ids, name(k))
				}
				found = append(found, append(ids, name(j)))
			}
		}
		path = path[:len(path)-1]
		state[i] = finished
	}
	for i := range stories {
		if state[i] == unseen {
			visit(i)
		}
	}
	return found
}

// storyName names the i-th of stories in messages: by its id when that
// is a word, else by its place, so that no message carries a line break
// or a terminal's escape.
func storyName(stories []*Story, i int) string {
	if id := stories[i].ID; CheckID(id) == nil {
		return id
	}
	return fmt.Sprintf("userStories[%d]", i)
}

// PlainLine returns s as a line of plain text, as a title or a project's
// name must be: without the characters ControlIn finds.
func PlainLine(s string) string {
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, s)
}

// ControlIn returns the first control character in s (a line break, a tab,
// an escape), Unicode line or paragraph separator, or bidirectional
// embedding, override or isolate, which turns what follows it around on a
// terminal: what a line of plain text (a title, a project's or a check's
// name) may not hold.
func ControlIn(s string) (rune, bool) {
	// Most text is ASCII, whose only such characters are C0 and DEL: it is
	// read byte by byte, and the rest, if any, rune by rune.
	i := 0
	for ; i < len(s) && s[i] < utf8.RuneSelf; i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return rune(c), true
		}
	}
	for _, r := range s[i:] {
		if isControl(r) {
			return r, true
		}
	}
	return 0, false
}

// isControl reports whether r is a character ControlIn finds.
func isControl(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		'\u202A' <= r && r <= '\u202E' || '\u2066' <= r && r <= '\u2069'
}

// MaxID is the longest id a story may have, in bytes.
const MaxID = 256

// CheckID says what is wrong with id as a story's id, or nil: it must be
// a word, not empty and with no space or control character in it, as the
// commands take ids and the ledger writes them in its lines, and at most
// MaxID bytes long.
func CheckID(id string) error {
	if id != "" && len(id) <= MaxID && isWord(id) {
		return nil
	}
	switch {
	case id == "":
		return errors.New("empty")
	case len(id) > MaxID:
		// It goes into the agent's environment (RALPH_TASK_ID), where
		// Linux takes no string over 128 KiB, and into every prompt.
		return fmt.Errorf("is %d bytes long; an id is at most %d", len(id), MaxID)
	case !utf8.ValidString(id):
		// Saved, it would read back as another id (U+FFFD for each bad byte).
		return errors.New("is not UTF-8 text")
	case strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return errors.New("contains a space or a control character")
	}
	// An invisible character (a zero-width space, a bidirectional
	// override) makes an id that looks like another, or turns the line
	// it is shown in around.
	if i := strings.IndexFunc(id, func(r rune) bool { return unicode.Is(unicode.Cf, r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(id[i:])
		return fmt.Errorf("contains %U, an invisible character", r)
	}
	return nil
}

// isWord reports whether s is printable ASCII without a space, as nearly
// every id is: such an id needs no closer look.
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// unnamed names no story: for counting problems, whose messages are not
// made.
func unnamed(int) string { return "" }
