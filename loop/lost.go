package loop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ralph-harness/ralph/internal/plural"
	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
)

// A change the guard finds and cannot undo (a file past what it keeps, of
// which git has no copy as it was: see putBack) must not stand as if it had
// been undone: the next attempt, or the next story, would be judged with it
// in place (a test file the agent deleted would fail no more). So the story
// whose iteration it was is set aside for a person, blocked with a question
// that says what ralph could not undo, and passes no more until a person
// has answered that question (see iteration.answered).

// lostEnd ends the line of a change the guard could not undo (see
// putBack).
const lostEnd = "ralph could not put it back"

// isLost reports whether t, a tampered line, is one of a change the guard
// could not undo. Every line ends with ralph's own words, never a name.
func isLost(t string) bool { return strings.HasSuffix(t, ": "+lostEnd) }

// lostPrefix begins the question of iteration n's changes that ralph could
// not undo: an answer to a question that begins so is a person's word that
// they are put back (see iteration.answered).
func lostPrefix(n int) string {
	return fmt.Sprintf("ralph could not undo what iteration %d changed: ", n)
}

// lostReason is the verdict's reason when n changes could not be undone.
func lostReason(n int) string {
	return plural.Of(n, "ralph could not undo a change", "ralph could not undo %d changes") + ": the story waits for a person"
}

// lostQuestion is the question of a story set aside because iteration n
// changed what ralph could not undo, lost (tampered lines): what, and what
// to do. asked is the agent's own question, if it asked one.
func lostQuestion(n int, storyID string, lost []string, asked string) string {
	what, putBack := lostWhat(lost)
	q := lostPrefix(n) + what + ". " + putBack + ", then run: ralph task answer " + storyID + ` "…" (until then the story cannot pass)`
	if asked != "" {
		q += ". The agent asked too: " + asked
	}
	return q
}

// lostWhat says what of lost (tampered lines) a person is to put back,
// each without the words that say ralph could not, and asks them to.
func lostWhat(lost []string) (what, putBack string) {
	ws := make([]string, len(lost))
	for i, t := range lost {
		ws[i] = strings.TrimSuffix(t, ": "+lostEnd)
	}
	return strings.Join(ws, " · "), plural.Of(len(lost), "Put it back as it was", "Put them back as they were")
}

// lostLines are the lines of tampered that tell of changes the guard could
// not undo.
func lostLines(tampered []string) []string {
	var lost []string
	for _, t := range tampered {
		if isLost(t) {
			lost = append(lost, t)
		}
	}
	return lost
}

// answered is the verdict v, done, unless an earlier iteration of the story
// s changed what ralph could not undo and no person has answered its
// question since: the agent of another story, or a person's reset, may
// have cleared the question with the change still in place. Then the
// story is set aside again, with that question. The ledger is read back as
// far as maxHistoryScan.
func (it *iteration) answered(v Verdict, s *prd.Story) (Verdict, error) {
	if it.totals.Lost == 0 {
		// The ledger tells of no change ralph could not undo: nothing
		// to look back for (a long ledger is a long read).
		return v, nil
	}
	var answers []prd.Answer
	if s != nil {
		answers = s.Answers
	}
	id := it.entry.StoryID
	var q string
	err := progress.TailHeads(it.o.path(ProgressFile), maxHistoryScan, func(h progress.Head) bool {
		if h.StoryID != id {
			return true
		}
		e := h.Entry()
		lost := lostLines(e.Tampered)
		if len(lost) == 0 {
			return true
		}
		prefix := lostPrefix(e.Iteration)
		if slices.ContainsFunc(answers, func(a prd.Answer) bool { return strings.HasPrefix(a.Question, prefix) }) {
			return true
		}
		q = lostQuestion(e.Iteration, id, lost, "")
		return false
	})
	if err != nil || q == "" {
		return v, err
	}
	return Verdict{Outcome: Blocked, Reason: "an earlier change ralph could not undo is not answered: the story waits for a person", Question: q}, nil
}

// setAside sets the iteration's story aside for a person when its entry
// tells of changes the guard could not undo, where no verdict did: in an
// iteration cut short (interrupted, or by the agent's service), or after
// the verdict, by the programs git ran in ralph's commit. A verdict the
// entry holds becomes blocked, with the question, as the story does.
func (it *iteration) setAside() error {
	o, e := it.o, &it.entry
	lost := lostLines(e.Tampered)
	if len(lost) == 0 {
		return nil
	}
	q := o.secrets().String(lostQuestion(e.Iteration, e.StoryID, lost, ""))
	err := prd.Update(o.path(PRDFile), PRDFile, it.syncs, func(f *prd.File) error {
		s := f.Story(e.StoryID)
		if s == nil || s.Blocked == q {
			return prd.ErrUnchanged
		}
		s.SetStatus(prd.Status{Attempts: s.Attempts, Blocked: q})
		return nil
	})
	if err != nil {
		return err
	}
	switch e.Outcome {
	case Done, Retry, Failed, Blocked:
		e.Outcome, e.Question = Blocked, q
	}
	o.warn("%s is set aside for a person: %s", e.StoryID, q)
	return nil
}

// lostToGit is the loop's stop when what the programs git ran changed
// (outside an iteration: its git status at the start, the ledger's last
// commit) could not be undone, lost: no story is set aside for it, but
// the loop does not carry on, nor end as if all were well.
func lostToGit(lost []string) error {
	what, putBack := lostWhat(lost)
	return stopf(NeedsHuman, "ralph could not undo what a program git ran changed: %s. %s, and run `ralph loop` again", what, putBack)
}
