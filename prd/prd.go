// Package prd reads and writes prd.json, the task list that ralph works through:
// the stories a human wrote and the status of each that only ralph may change.
// It validates the file, picks the next story to work on and saves the file
// atomically, keeping the order of keys and every field it does not know.
package prd

import (
	"bytes"
	"slices"
	"sync"

	"github.com/ralph-harness/ralph/internal/atomicfile"
	"github.com/ralph-harness/ralph/internal/durable"
	"github.com/ralph-harness/ralph/internal/readbuf"
)

// File is a parsed prd.json.
type File struct {
	Project     string
	BranchName  string
	Description string
	Stories     []*Story

	fields []field  // top-level members as parsed, in order
	orig   *File    // the header as parsed, to tell which fields changed
	text   [][]byte // the text as parsed, in pieces (see marshal)
	// ids is where each story was when the file last validated, by id:
	// ids are unique then, so the story found there is the only one.
	ids *idIndex
	// canonical: raw is laid out as Marshal writes it, so its values can
	// be copied as they are.
	canonical bool
}

// Story is one user story of a File.
type Story struct {
	ID                 string
	Title              string
	Description        string
	AcceptanceCriteria []string
	Priority           int // 0 when absent (see HasPriority)
	HasPriority        bool
	Notes              string
	Checks             []string // shell commands that must pass for this story
	DependsOn          []string // ids of stories that must be done first

	// Status: written by ralph only.
	Passes   bool
	Attempts int
	Blocked  string // the open question for a human; "" when not blocked
	Failed   string // why the story was given up; "" when not failed

	// Answers are the questions a person answered, oldest first: written
	// by ralph only (`ralph task answer`), and shown to the agent. They are
	// not part of Status: an answer is kept however the status changes.
	Answers []Answer

	raw []byte // the story's text as parsed: its members, in order
	// idHash is the hash of ID that validate indexes it by, taken by the
	// decoder as it read the id, or by validate (see idHashes).
	idHash uint64
	// sum is what sum made of the story as parsed from raw: a story
	// whose sum is the same did not change (see unchanged).
	sum uint64
	// orig is the story as parsed, when Parse remembers it (see memo):
	// the memo's copy, which nothing changes; nil otherwise.
	orig      *Story
	canonical bool // raw is laid out as Marshal writes it
}

// Answer is a person's answer to a question a story was blocked on.
type Answer struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Status is the part of a story that only ralph may change.
type Status struct {
	Passes   bool
	Attempts int
	Blocked  string
	Failed   string
}

// Status returns the status fields of s.
func (s *Story) Status() Status {
	return Status{Passes: s.Passes, Attempts: s.Attempts, Blocked: s.Blocked, Failed: s.Failed}
}

// SetStatus sets the status fields of s.
func (s *Story) SetStatus(st Status) {
	s.Passes, s.Attempts, s.Blocked, s.Failed = st.Passes, st.Attempts, st.Blocked, st.Failed
}

// The states of a story, as returned by File.State.
const (
	StateDone    = "done"    // passes
	StateFailed  = "failed"  // given up after too many attempts
	StateBlocked = "blocked" // waiting for a human's answer
	StateWaiting = "waiting" // a story it depends on is not done
	StateTodo    = "todo"    // can be worked on
)

// State returns the state of s, a story of f: "done", "failed", "blocked",
// "waiting" or "todo". The first that applies wins, in that order.
func (f *File) State(s *Story) string {
	switch {
	case s.Passes:
		return StateDone
	case s.Failed != "":
		return StateFailed
	case s.Blocked != "":
		return StateBlocked
	}
	for _, id := range s.DependsOn {
		if dep := f.Story(id); dep == nil || !dep.Passes {
			return StateWaiting
		}
	}
	return StateTodo
}

// WaitsOn returns the ids of the stories s depends on that are not done,
// in its order: what a waiting story waits on.
func (f *File) WaitsOn(s *Story) []string {
	var ids []string
	for _, id := range s.DependsOn {
		if dep := f.Story(id); dep == nil || !dep.Passes {
			ids = append(ids, id)
		}
	}
	return ids
}

// Story returns the story with the given id, or nil if there is none.
func (f *File) Story(id string) *Story {
	// The index of a file that validated answers at once; a story added
	// or moved since is found by looking through them all.
	if i, ok := f.ids.lookup(idHash(id), id, f.Stories); ok {
		return f.Stories[i]
	}
	for _, s := range f.Stories {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Next returns the story to work on next: of the stories in state "todo", the
// one with the lowest priority number, where a story without a priority comes
// after all that have one and ties keep file order. It returns nil if no story
// can be worked on.
func (f *File) Next() *Story {
	var best *Story
	for _, s := range f.Stories {
		if f.State(s) != StateTodo {
			continue
		}
		if best == nil || before(s, best) {
			best = s
		}
	}
	return best
}

// before reports whether a runs before b by priority alone.
func before(a, b *Story) bool {
	if a.HasPriority != b.HasPriority {
		return a.HasPriority
	}
	return a.HasPriority && a.Priority < b.Priority
}

// ParsedFrom reports whether f was parsed from the text data, whatever was
// changed in f since: a caller that holds a File and reads the file again
// can tell whether the text is still what it parsed.
func (f *File) ParsedFrom(data []byte) bool { return f.text != nil && isText(data, f.text) }

// isText reports whether data is the pieces of text one after another.
func isText(data []byte, text [][]byte) bool {
	for _, p := range text {
		if !bytes.HasPrefix(data, p) {
			return false
		}
		data = data[len(p):]
	}
	return len(data) == 0
}

// Done reports whether every story passes. A file without stories is not
// done: there is nothing to have finished (and the loop refuses it).
func (f *File) Done() bool {
	return len(f.Stories) > 0 && !slices.ContainsFunc(f.Stories, func(s *Story) bool { return !s.Passes })
}

// Load reads the file at path and parses it; messages name the file by path.
func Load(path string) (*File, error) { return Read(path, path) }

// Read reads the file at path and parses it as Parse does; messages name the
// file as name. A failure to read the file is an *fs.PathError.
func Read(path, name string) (*File, error) {
	data, err := readText(path)
	if err != nil {
		return nil, err
	}
	return parseRead(data, name)
}

// readText reads the file at path into the spare buffer, if there is one.
func readText(path string) ([]byte, error) {
	spare.Lock()
	buf := spare.buf
	spare.buf = nil
	spare.Unlock()
	return readbuf.ReadFile(buf, path)
}

// parseRead parses data, which readText returned, as Read does.
func parseRead(data []byte, name string) (*File, error) {
	// The text is read here and nothing else has it: the File may keep it
	// as it is, without the copy Parse makes. When Parse knew the text
	// already, the buffer serves the next read.
	f, kept, err := parseText(data, name, true, nil)
	if !kept {
		putSpare(data)
	}
	return f, err
}

// putSpare gives the buffer data back for the next read.
func putSpare(data []byte) {
	spare.Lock()
	spare.buf = data
	spare.Unlock()
}

// spare is a buffer for Read: in the loop, most reads find the text Parse
// remembers, and keep nothing of what they read.
var spare struct {
	sync.Mutex
	buf []byte
}

// Save writes Marshal's output to path atomically: after a crash or a failed
// write, path holds either the old file or the new one, whole.
func (f *File) Save(path string) error { return f.save(path, nil) }

// save is Save with the directory's sync queued on q (see
// atomicfile.WriteQueued).
func (f *File) save(path string, q *durable.Queue) error {
	text, l := f.marshal()
	if err := atomicfile.WriteQueued(path, 0o644, q, text...); err != nil {
		return err
	}
	if !readOnce.Load() {
		remember(text, f, l)
	}
	return nil
}
