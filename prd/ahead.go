package prd

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ralph-harness/ralph/internal/atomicfile"
	"github.com/ralph-harness/ralph/internal/durable"
)

// Ahead is a save of a File with one story's status changed, written
// ahead of time, where nobody can see it (see atomicfile.Prepare): the
// loop writes prd.json as it will be if the story passes while the agent
// works, so that recording that verdict afterwards takes no write, nor a
// sync, of its own.
type Ahead struct {
	done chan struct{} // closed once the write is done or given up
	from *File         // the File the change was made to
	id   string
	st   Status

	// Set once done, when the write went well.
	saved *File
	text  [][]byte
	l     *layout
	p     *atomicfile.Pending
}

// WriteAhead starts writing, in the background, the file at path as f
// with the status of story id set to st, and returns at once. f must have
// come from Read or Parse and must not change until the Ahead is closed.
// Where nothing can be written ahead (see atomicfile.Prepare), SetStatus
// writes the file as Update does.
func (f *File) WriteAhead(path, id string, st Status) *Ahead {
	a := &Ahead{done: make(chan struct{}), from: f, id: id, st: st}
	go func() {
		defer close(a.done)
		i := slices.IndexFunc(f.Stories, func(s *Story) bool { return s.ID == id })
		if i < 0 {
			return
		}
		c := *f
		c.Stories = slices.Clone(f.Stories)
		s := *c.Stories[i]
		s.SetStatus(st)
		c.Stories[i] = &s
		text, l := c.marshal()
		p, err := atomicfile.Prepare(path, 0o644, text...)
		if err != nil {
			return
		}
		a.saved, a.text, a.l, a.p = &c, text, l, p
	}()
	return a
}

// Close waits for a's write, and lets go of it unless SetStatus used it.
// It may be called on a nil Ahead, and more than once.
func (a *Ahead) Close() {
	if a != nil {
		<-a.done
		a.p.Close()
	}
}

// fits reports whether a was written for the status st of story id.
func (a *Ahead) fits(id string, st Status) bool {
	return a != nil && a.id == id && a.st == st
}

// commit puts a in the file's place when the file's text, data, is still
// the one a's change was made to, and reports whether it did. Only a save
// that fits the change the caller makes may be committed.
func (a *Ahead) commit(data []byte, q *durable.Queue) bool {
	if a == nil {
		return false
	}
	<-a.done
	if a.p == nil || !a.from.ParsedFrom(data) {
		return false
	}
	if err := a.p.Commit(q); err != nil {
		// Nothing was replaced: the file is written as usual.
		return false
	}
	remember(a.text, a.saved, a.l)
	return true
}

// ErrNoStory is SetStatus's error for a story the file does not have.
var ErrNoStory = errors.New("no such story")

// SetStatus sets the status of story id in the file at path to st, as
// Update does. When ahead (see WriteAhead) was written for that status of
// that story, from the text the file still holds, it takes the file's
// place instead of a new write. The error for a missing story wraps
// ErrNoStory.
func SetStatus(path, name string, q *durable.Queue, id string, st Status, ahead *Ahead) error {
	if !ahead.fits(id, st) {
		ahead = nil
	}
	_, err := update(path, name, q, ahead, true, nil, func(f *File) error {
		s := f.Story(id)
		if s == nil {
			return fmt.Errorf("%s: story %s: %w", name, id, ErrNoStory)
		}
		s.SetStatus(st)
		return nil
	})
	return err
}
