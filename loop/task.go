package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/internal/textcut"
	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
)

// This file holds the edits of `ralph task`. Each goes through prd.Update,
// so that it and a running loop never lose each other's changes, and each
// checks its input against the file as it is under the lock: bad input is an
// *InputError and leaves prd.json as it was.

// edit changes prd.json with fn under the lock. A missing or broken file
// is bad input, named as the user knows it. fn gets a file that validated;
// an edit that can make it invalid validates it again (AddStory), one that
// changes only a story's status or answers need not, and goes through
// editStory.
//
// With harness.toml's settings in o.Config, an iteration that a stopped
// ralph left open is recorded first (see closeStopped), once a dry run of
// fn on the file as it is has said the edit is good and changes something:
// bad input changes nothing, that record included.
//
// The dry run is made only when such an iteration is open: a file of
// thousands of stories is read once in the usual case, not twice.
func edit(o Options, fn func(f *prd.File) error) error {
	return editFile(o, false, fn)
}

// editStory is edit for an edit that changes one story's own members,
// not its id nor its dependsOn (see prd.UpdateStories): a large file's
// dependencies are checked while fn runs and the file is written, and
// fn's change is dropped when they are not sound.
func editStory(o Options, fn func(f *prd.File) error) error {
	return editFile(o, true, fn)
}

// editFile is edit, through prd.UpdateStories when members says that fn
// changes the stories' own members only.
func editFile(o Options, members bool, fn func(f *prd.File) error) error {
	if o.harnessed() && leftOpen(o.path(ProgressFile)) != nil {
		if f, err := prd.Read(o.path(PRDFile), PRDFile); err == nil {
			switch err := fn(f); {
			case errors.Is(err, prd.ErrUnchanged):
			case err != nil:
				return err
			default:
				closeStopped(context.Background(), o)
			}
		}
	}
	valid, err := prd.Edit(o.path(PRDFile), PRDFile, members, o.waitingForPRD, fn)
	if err != nil && !valid {
		// prd.json could not be locked, read or parsed, or is not valid.
		return o.prdError(err)
	}
	return err
}

// waitingForPRD says what an edit waits for when another holds
// prd.json's lock for more than a moment (see prd.Edit): a running loop
// holds it while it picks and starts an iteration, in which git may take
// its time (a large project, a stuck network file system), and while it
// records one. The edit goes on waiting; a signal ends it, changing
// nothing.
func (o *Options) waitingForPRD() {
	path := o.path(ProgressFile)
	who, err := progress.HeldBy(path)
	if err != nil {
		who = progress.NoHolder
	}
	pid := ""
	if who != progress.NoHolder {
		pid = holderPID(filepath.Dir(path))
	}
	var holder string
	switch who {
	case progress.LoopHolder:
		holder = fmt.Sprintf("the `ralph loop` running in %s%s holds while it starts or records an iteration", o.Dir, pid)
	case progress.BriefHolder:
		holder = fmt.Sprintf("a `ralph task` edit%s holds while it records the iteration a stopped ralph left open in %s", pid, o.Dir)
	default:
		holder = fmt.Sprintf("another process holds (no `ralph loop` runs in %s: another `ralph task` edit, say)", o.Dir)
	}
	o.warn("waiting for the lock on %s, which %s; the edit is made once it lets go (Ctrl-C gives the edit up, changing nothing)", PRDFile, holder)
}

// holderPID names the process other than this one that holds the
// directory dir open, as " (pid N)", where it can be told: the ralph that
// holds its lock (see progress.Open). It is empty where it cannot (no
// /proc, another user's process, more than one).
func holderPID(dir string) string {
	pids, err := proc.Holders(dir)
	pids = slices.DeleteFunc(pids, func(pid int) bool { return pid == os.Getpid() })
	if err != nil || len(pids) != 1 {
		return ""
	}
	return fmt.Sprintf(" (pid %d)", pids[0])
}

// harnessed reports whether o.Config holds harness.toml's settings: a
// file that was read and is valid always names an agent.
func (o *Options) harnessed() bool { return len(o.Config.Agent.Argv) > 0 }

// notRunning returns an error when the story id is the one a loop running in
// o.Dir works on now: its status is the agent's to leave alone, and the
// loop's guard would undo a change as the agent's (and count it against
// the story). A story whose iteration a killed ralph left open may change.
func (o *Options) notRunning(id string) error {
	path := o.path(ProgressFile)
	m, err := progress.InFlight(path)
	if err != nil || m == nil || m.StoryID != id {
		return err
	}
	if held, err := progress.Held(path); err != nil || !held {
		return err
	}
	return fmt.Errorf("%s is being worked on now, in iteration %d of the ralph loop running in %s: change it once that iteration ends, or stop the loop first", id, m.Iteration, o.Dir)
}

// story returns the story id of f, or an *InputError naming it.
func story(f *prd.File, id string) (*prd.Story, error) {
	if s := f.Story(id); s != nil {
		return s, nil
	}
	return nil, inputErrorf("%s has no story %q", PRDFile, id)
}

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// NewStory is a story for AddStory: the fields a person writes.
type NewStory struct {
	ID                 string
	Title              string
	Description        string
	AcceptanceCriteria []string
	Priority           int
	HasPriority        bool
	DependsOn          []string
	Checks             []string
}

// AddStory appends a story to prd.json and returns it as written. Its id
// must be new and the stories it depends on must exist.
func AddStory(o Options, n NewStory) (StoryDetail, error) {
	var errs []error
	if err := prd.CheckID(n.ID); err != nil {
		errs = append(errs, fmt.Errorf("id %q: %w", textcut.Head(n.ID, prd.MaxID, "…"), err))
	}
	if strings.TrimSpace(n.Title) == "" {
		errs = append(errs, errors.New("title: empty"))
	}
	for i, c := range n.Checks {
		if strings.TrimSpace(c) == "" {
			errs = append(errs, fmt.Errorf("checks[%d]: empty command", i))
		}
	}
	if len(errs) > 0 {
		return StoryDetail{}, &InputError{Err: errors.Join(errs...)}
	}
	var added StoryDetail
	err := edit(o, func(f *prd.File) error {
		var errs []error
		if i := slices.IndexFunc(f.Stories, func(s *prd.Story) bool { return s.ID == n.ID }); i >= 0 {
			errs = append(errs, fmt.Errorf("%s already has a story %q (userStories[%d])", PRDFile, n.ID, i))
		}
		for _, id := range n.DependsOn {
			switch {
			case id == n.ID:
				errs = append(errs, fmt.Errorf("dependsOn %q: a story cannot depend on itself", id))
			case f.Story(id) == nil:
				errs = append(errs, fmt.Errorf("dependsOn %q: %s has no such story", id, PRDFile))
			}
		}
		if len(errs) > 0 {
			return &InputError{Err: errors.Join(errs...)}
		}
		// The texts lose the secrets of the environment, as everything
		// ralph writes; not the checks, which would no longer run.
		r := o.secrets()
		s := f.AddStory(prd.Story{
			ID:                 n.ID,
			Title:              r.String(n.Title),
			Description:        r.String(n.Description),
			AcceptanceCriteria: r.Strings(slices.Clone(n.AcceptanceCriteria)),
			Priority:           n.Priority,
			HasPriority:        n.HasPriority,
			DependsOn:          uniq(n.DependsOn),
			Checks:             n.Checks,
		})
		if err := f.Validate(PRDFile); err != nil {
			return &InputError{Err: err}
		}
		added = storyDetail(f, s)
		return nil
	})
	return added, err
}

// uniq returns ids without the repeats of any, in their order: a story
// named twice in --depends-on is waited on once.
func uniq(ids []string) []string {
	if ids == nil {
		return nil
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// AnswerStory answers the question the story id is blocked on: the answer
// is kept with the story (and shown to the agent from then on) and the
// story is unblocked. It returns the story as it is now and the question
// answered.
func AnswerStory(o Options, id, answer string) (StoryDetail, string, error) {
	var after StoryDetail
	var question string
	err := editStory(o, func(f *prd.File) error {
		s, err := story(f, id)
		if err != nil {
			return err
		}
		if s.Blocked == "" {
			return inputErrorf("%s is %s, not blocked: there is no question to answer", id, f.State(s))
		}
		// Blocked by its agent, whose iteration has not ended: the guard
		// would undo the answer with the question.
		if err := o.notRunning(id); err != nil {
			return err
		}
		question = s.Blocked
		if err := s.Answer(o.secrets().String(answer)); err != nil {
			return &InputError{Err: err}
		}
		after = storyDetail(f, s)
		return nil
	})
	return after, question, err
}

// ResetStory makes the story id one to work on from scratch: not passing,
// no attempts, neither failed nor blocked; its answers are kept. It returns
// the story as it was and as it is now; when there was nothing to reset,
// the file is not written.
func ResetStory(o Options, id string) (before, after StoryDetail, err error) {
	err = editStory(o, func(f *prd.File) error {
		s, err := story(f, id)
		if err != nil {
			return err
		}
		before = storyDetail(f, s)
		// The running story is refused even with nothing to reset: what
		// the reset would leave is the judge's to say.
		if err := o.notRunning(id); err != nil {
			return err
		}
		if s.Status() == (prd.Status{}) {
			after = before
			return prd.ErrUnchanged
		}
		s.Reset()
		after = storyDetail(f, s)
		return nil
	})
	return before, after, err
}

// BlockStory sets the story id aside with a question for a person, as an
// agent's "blocked" reply does; a blocked story's question is replaced. It
// returns the question as saved (secrets kept out) and the one replaced,
// if any. A story that passes or failed cannot be blocked: reset it first.
// The question is a line of plain text, as prd.json's validation wants it:
// it is shown on people's terminals.
func BlockStory(o Options, id, question string) (saved, replaced string, err error) {
	if r, ok := prd.ControlIn(question); ok {
		return "", "", inputErrorf("%s: the question holds %U, a control character: a question is a line of plain text", id, r)
	}
	question = o.secrets().String(question)
	err = editStory(o, func(f *prd.File) error {
		s, err := story(f, id)
		if err != nil {
			return err
		}
		switch state := f.State(s); state {
		case prd.StateDone, prd.StateFailed:
			return inputErrorf("%s is %s: run `ralph task reset %s` first to work on it again", id, state, id)
		}
		replaced = s.Blocked
		if replaced == question {
			return prd.ErrUnchanged
		}
		if err := o.notRunning(id); err != nil {
			return err
		}
		s.Blocked = question
		return nil
	})
	return question, replaced, err
}
