package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/internal/atomicfile"
	"github.com/ralph-harness/ralph/internal/plural"
	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
)

// Crash safety. ralph may be killed at any instant, kill -9 included, and the
// next `ralph loop` must carry on from the three files alone:
//
//   - prd.json and harness.toml are only ever replaced whole (atomicfile), so
//     they hold the old content or the new; a kill between the temp file and
//     the rename leaves the temp file, which recover removes.
//   - progress.txt is only appended to, one write per record; a torn last
//     entry is skipped by every reader, and the next append starts on a
//     fresh line.
//   - Before the agent starts, the iteration's started marker is appended
//     (progress.Ledger.Begin). A marker that no entry follows is an
//     iteration the last ralph never finished: recover records it as
//     interrupted under the marker's number, so numbering, attempts and
//     totals carry on and nothing is redone as if it were new. A verdict
//     already in prd.json stays there, but for a pass: with no entry to
//     vouch for it, it may be the agent's (see resumeInFlight). The marker
//     of a story's first attempt holds the baseline taken before the agent
//     ran, which the interrupted entry keeps for the attempts that follow.
//     The marker before those baseline checks is the exception: nothing
//     ran but them, so no entry is written, only a line that drops the
//     marker, and the next iteration takes the number and the baseline
//     again (a pass is undone all the same). A ralph stopped by a signal
//     during them writes that line itself, once their guard has run.
//   - A ralph killed before its guard looked keeps no copy of what the
//     agent, or the checks, which run the agent's code, may not change:
//     the marker keeps digests of it instead (see changedSince), the
//     marker of baseline checks too, and the next ralph stops for a
//     person when they differ (see resumeInFlight).
//   - A kill loses no write; a crash of the machine loses what was not
//     synced. Each record is synced, in the background and in the order of
//     the records (package durable), and all of them before Run returns:
//     the marker's sync runs while the agent does, and the verdict is
//     written only once it is done, so a verdict on disk always finds its
//     marker. The syncs of the verdict's rename and of the entry come after
//     it, in that order, while the next iteration begins. (A file system
//     that wrote the ledger's blocks back on its own ahead of the rename
//     could leave the entry on disk without its verdict after a crash, and
//     the attempt would be run again; ext4, XFS and btrfs keep such
//     metadata in order.)
//   - The group leader of the agent or a check dies with ralph (proc's
//     parent-death signal); what it started is found by its environment
//     (RALPH_ITERATION, RALPH_TASK_ID, and RALPH_DIR, which tells it from
//     what a loop in a project nested in this one started) and killed by
//     recover.
//   - A git killed during a commit may leave .git/index.lock, which would
//     fail every later commit: recover removes it when no process has it
//     open.

// recover makes the work directory fit to run after whatever stopped the last
// ralph. It runs with the ledger's lock held, before anything else is
// written. Only a failure to record the interrupted iteration is an error;
// the rest is done as well as it can be, with a warning for what could not.
func (o *Options) recover(ctx context.Context, ledger *progress.Ledger) error {
	o.removeTemps()
	if err := o.resumeInFlight(ctx, ledger); err != nil {
		return err
	}
	if o.Config.Commit {
		o.clearIndexLock(ctx)
	}
	return nil
}

// closeStopped records the iteration that a stopped ralph left open in
// o.Dir, as the next `ralph loop` would (see resumeInFlight), before a
// `ralph task` edit is made: made first, the edit would be among what that
// loop finds changed since the iteration began, and it would stop to ask
// about it as it asks about the agent's (exit 5). An iteration stopped
// during its baseline checks is dropped, as that loop would drop it. It
// does nothing when no iteration is open, a running loop has it, or its
// marker keeps no digests (the next loop asks nothing then: its snapshot
// failed, or an older ralph, which kept none for baseline checks, wrote
// it). When what ralph guards changed since the iteration began, or the
// record fails, it only warns: the next `ralph loop` sees to the
// iteration, and the edit goes on, as recording early only does that
// loop's work sooner.
// It holds the ledger's lock while it records, as a brief holder (see
// progress.OpenBrief): a `ralph loop` started meanwhile waits for it
// rather than take it for another loop, and is refused should it take
// longer than briefWait.
func closeStopped(ctx context.Context, o Options) {
	path := o.path(ProgressFile)
	m := leftOpen(path)
	if m == nil {
		return
	}
	ledger, err := progress.OpenBrief(path)
	switch {
	case errors.Is(err, progress.ErrLocked):
		return // a running loop has it, and its guard looks (or another edit records it)
	case err != nil:
		o.warn("iteration %d (%s), left open by a ralph that stopped, is not recorded yet (%v): the next `ralph loop` sees to it", m.Iteration, m.StoryID, err)
		return
	}
	defer ledger.Close()
	if m = leftOpen(path); m == nil {
		return // recorded meanwhile
	}
	changed, err := o.settleInFlight(ctx, m)
	if err == nil && len(changed) == 0 {
		err = o.recordInFlight(ledger, m, nil)
	}
	switch {
	case len(changed) > 0:
		o.warn("iteration %d (%s), left open by a ralph that stopped, is not recorded yet: files ralph guards are not as they were when it began (%s), and the next `ralph loop` stops to ask about them (exit 5), as it cannot tell a person's change from the agent's", m.Iteration, m.StoryID, strings.Join(changed, ", "))
	case err != nil:
		o.warn("iteration %d (%s), left open by a ralph that stopped, is not recorded yet (%v): the next `ralph loop` sees to it", m.Iteration, m.StoryID, err)
	}
}

// briefWait bounds how long a starting loop waits for a `ralph task` edit
// that records an iteration a stopped ralph left open (see closeStopped):
// it lists and reads the files ralph guards, as a loop's start does, which
// a large project's git takes its time over.
const briefWait = time.Minute

// leftOpen returns the marker of the iteration left open in the ledger at
// path that closeStopped records, or nil when there is none: none is open,
// the ledger cannot be read, or the marker keeps no digests.
func leftOpen(path string) *progress.Mark {
	m, err := progress.InFlight(path)
	if err != nil || m == nil || len(m.Guarded) == 0 {
		return nil
	}
	return m
}

// removeTemps removes the temp files of atomic writes that a killed ralph
// left behind. prd.json's are removed under the lock `ralph task` edits
// take; harness.toml is written by the loop alone, whose lock is held.
func (o *Options) removeTemps() {
	for _, name := range []string{PRDFile, HarnessFile} {
		var removed []string
		var err error
		if name == PRDFile {
			removed, err = prd.RemoveTemps(o.path(name))
		} else {
			removed, err = atomicfile.RemoveTemps(o.path(name))
		}
		for _, p := range removed {
			o.warn("removed %s, left by a ralph stopped while it wrote %s", filepath.Base(p), name)
		}
		if err != nil {
			o.warn("%v", err)
		}
	}
}

// resumeInFlight records the iteration that the last ralph started and never
// recorded, after killing what its agent and checks left running. One
// stopped during its baseline checks is dropped (see Mark.Recorded).
// When what the guard watches changed during the iteration, its baseline
// checks included, it stops for a person instead, recording nothing (see
// changedSince): the checks run the agent's code, which may have changed
// it and killed ralph as the agent can. A marker of baseline checks that an
// older ralph wrote keeps no digests, and is dropped without a look.
func (o *Options) resumeInFlight(ctx context.Context, ledger *progress.Ledger) error {
	m, err := progress.InFlight(o.path(ProgressFile))
	if err != nil || m == nil {
		return err
	}
	changed, err := o.settleInFlight(ctx, m)
	switch {
	case err != nil && !o.AcceptChanges:
		return err
	case err != nil:
		o.warn("%v", err)
	case len(changed) > 0 && !o.AcceptChanges:
		cut, began, who := "before ralph could check what its agent changed", "the agent began", "The agent"
		if !m.Recorded() {
			cut, began, who = "during its baseline checks, before ralph could check what they changed", "they began", "The checks run the code the agent wrote, which"
		}
		return stopf(NeedsHuman, "iteration %d (%s) was cut short %s, and files ralph guards are not as they were when %s: %s. %s may have changed them and then stopped ralph; ralph keeps no copy to put back, and cannot tell such a change from yours. Look at them, put back what is not yours and run `ralph loop` again, or keep them all with `ralph loop --accept-changes`",
			m.Iteration, m.StoryID, cut, began, strings.Join(changed, ", "), who)
	}
	return o.recordInFlight(ledger, m, changed)
}

// settleInFlight kills what the agent and the checks of the iteration m,
// which a stopped ralph left open, left running, and then returns what
// ralph guards that is not as m's marker says (see changedSince).
func (o *Options) settleInFlight(ctx context.Context, m *progress.Mark) ([]string, error) {
	env := []string{"RALPH_ITERATION=" + strconv.Itoa(m.Iteration), "RALPH_TASK_ID=" + m.StoryID}
	pids, err := proc.KillStrays(o.Dir, env)
	if len(pids) > 0 {
		o.warn("killed %s left running by iteration %d", plural.Of(len(pids), "1 process", "%d processes"), m.Iteration)
	}
	if err != nil {
		o.warn("%v", err)
	}
	return o.changedSince(ctx, m)
}

// recordInFlight records the iteration m as interrupted (one of baseline
// checks, as dropped), undoing a verdict no entry vouches for; changed are
// what was kept as it is though it changed during it (--accept-changes).
func (o *Options) recordInFlight(ledger *progress.Ledger, m *progress.Mark, changed []string) error {
	totals, err := lastTotals(o.path(ProgressFile))
	if err != nil {
		return err
	}
	totals.Iterations = m.Iteration
	e := progress.Entry{
		Iteration: m.Iteration,
		Time:      m.Time,
		StoryID:   m.StoryID,
		Outcome:   Interrupted,
		Attempt:   m.Attempt,
		// The agent's exit is not known: -1, as for an agent that never ran.
		AgentExit: -1,
		AgentNote: "ralph stopped before the iteration ended; recorded by the next ralph loop",
		// What the iteration spent was never reported: the totals carry on
		// from the last entry.
		Totals: totals,
		// The baseline taken before the agent ran, when this was the
		// story's first attempt: later attempts find it here.
		Baseline: m.Baseline,
	}
	// The verdict goes into prd.json before the entry is appended: a
	// story that counts this attempt may have been judged. But the agent
	// can write prd.json as well as ralph can, attempts included, and then
	// kill ralph before its guard looks: a story passing with no entry to
	// say why is not believed, whoever marked it. Undone, the pass leaves
	// an interrupted iteration, which counts no attempt: a story on its
	// last attempt would otherwise fail without another run. A verdict of
	// retry or failed is undone too: the entry that would have held its
	// checks never came, and the ledger's interrupted entry, which counts
	// no attempt, must not sit beside a prd.json that counts one (nor a
	// story failed with no entry to say why). (ralph killed between its
	// save and its entry costs the story that run again.)
	undid := false
	var undone string // the warning of a verdict undone, once it is saved
	err = prd.Update(o.path(PRDFile), PRDFile, nil, func(f *prd.File) error {
		s := f.Story(m.StoryID)
		if s == nil {
			return prd.ErrUnchanged
		}
		e.StoryTitle = s.Title
		passed, counted := s.Passes, attemptCounted(s, m)
		verdict, next := Retry, fmt.Sprintf("the story runs attempt %d again", m.Attempt)
		switch {
		case s.Failed != "":
			verdict = Failed + ": " + s.Failed
		case s.Blocked != "":
			// Set aside after its verdict (see setAside), or by a
			// person since: the question stays.
			verdict, next = Blocked+": "+s.Blocked, "the story stays blocked until its question is answered"
		}
		if !undoVerdict(s, m) {
			return prd.ErrUnchanged
		}
		undid = true
		if passed {
			what := "was marked passing during the iteration, with no verdict; ralph undid that"
			switch {
			case !m.Recorded():
				what = "was marked passing during its baseline checks; ralph undid that"
			case counted:
				what = "was marked passing with this attempt counted, and no entry followed; ralph undid that, as it cannot tell its own verdict, saved as it stopped, from one the agent wrote"
			}
			e.Tampered = append(e.Tampered, fmt.Sprintf("%s: %s %s", PRDFile, m.StoryID, what))
			return nil
		}
		e.AgentNote = fmt.Sprintf("ralph stopped after saving the verdict (%s) in %s and before recording it here; the next ralph loop undid it, as an interrupted iteration counts no attempt", verdict, PRDFile)
		undone = fmt.Sprintf("%s: %s was judged (%s) as ralph stopped, and no entry followed: ralph undid the verdict, and %s", PRDFile, m.StoryID, verdict, next)
		return nil
	})
	if err != nil && undid {
		return err // the undo could not be saved
	}
	if undone != "" {
		o.warn("%s", undone)
	}
	// A file that cannot be read is the loop's start's to report.
	for _, t := range e.Tampered {
		o.warn("%s", t)
	}
	if !m.Recorded() {
		if len(changed) > 0 {
			// No entry to name them in: the warning does.
			o.warn("kept as they are, as asked (--accept-changes), though they changed during the baseline checks of iteration %d: %s", m.Iteration, strings.Join(changed, ", "))
		}
		return o.drop(ledger, *m)
	}
	if len(changed) > 0 {
		e.AgentNote += "; changed during it, kept as they are (--accept-changes): " + strings.Join(changed, ", ")
		o.warn("kept as they are, as asked (--accept-changes), though they changed during iteration %d: %s", m.Iteration, strings.Join(changed, ", "))
	}
	if err := ledger.Append(e); err != nil {
		return err
	}
	o.warn("iteration %d (%s) was cut short: the ralph running it stopped before it ended; recorded it as interrupted", m.Iteration, m.StoryID)
	o.judged(&e, "the ralph running it stopped before it ended")
	return nil
}

// drop ends the iteration m, stopped during its baseline checks, with no
// entry: it appends the line that drops m's marker (see
// progress.Ledger.Drop), and says so.
func (o *Options) drop(ledger *progress.Ledger, m progress.Mark) error {
	if err := ledger.Drop(m); err != nil {
		return err
	}
	o.warn("iteration %d (%s) was stopped during its baseline checks, before its agent started: nothing is recorded for it, and the next iteration takes its number", m.Iteration, m.StoryID)
	return nil
}

// undoVerdict undoes in s, the story of the iteration m that a stopped
// ralph left open, what a verdict may have saved: a pass, the attempt it
// counted, the failure it gave. An interrupted iteration counts no
// attempt, and the story, picked to run, was neither passing nor failed.
// It reports whether there was anything to undo.
func undoVerdict(s *prd.Story, m *progress.Mark) bool {
	counted := attemptCounted(s, m)
	if !s.Passes && !counted {
		return false
	}
	s.Passes, s.Failed = false, ""
	if counted {
		s.Attempts = m.Attempt - 1
	}
	return true
}

// attemptCounted reports whether s counts the attempt of the iteration m
// left open. A marker of no attempt (a hand edit: ralph numbers them from
// 1) vouches for no count of them.
func attemptCounted(s *prd.Story, m *progress.Mark) bool {
	return m.Attempt >= 1 && s.Attempts >= m.Attempt
}

// indexLockWait bounds how long recover waits for a git that holds
// index.lock to finish (the git of a killed ralph may still be committing).
const indexLockWait = 10 * time.Second

// clearIndexLock removes the index.lock that a git killed during a commit
// left behind: git never removes it by itself, so every later commit would
// fail. A lock is stale when no process has it open (git keeps it open
// from taking the lock until it renames it), twice, a moment apart; a lock
// that a live git holds is waited for, then left alone with a warning.
func (o *Options) clearIndexLock(ctx context.Context) {
	out, err := git(ctx, o.Dir, "rev-parse", "--git-path", "index.lock")
	if err != nil {
		return // not a work tree: nothing to commit, nothing to clear
	}
	path := gitPath(o.Dir, strings.TrimSpace(out))
	deadline := time.Now().Add(indexLockWait)
	for {
		first, err := os.Stat(path)
		if err != nil {
			return
		}
		held, err := proc.Holders(path)
		if err != nil {
			o.warn("%s exists and cannot be checked (%v): if no git is running, remove it, or every commit will fail", path, err)
			return
		}
		if len(held) == 0 {
			time.Sleep(100 * time.Millisecond)
			again, err := os.Stat(path)
			if err != nil {
				return // the git that held it finished
			}
			held, err = proc.Holders(path)
			if err == nil && len(held) == 0 && os.SameFile(first, again) {
				if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
					o.warn("remove stale %s: %v", path, err)
					return
				}
				o.warn("removed %s: no git has it open, so a git was killed during a commit and left it", path)
				return
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			o.warn("%s is held by process %s: commits fail until that git is done", path, fmt.Sprint(held))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
