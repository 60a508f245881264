// Package loop is ralph's engine: it runs one iteration after another (pick a
// story, prompt a fresh agent, run the checks, judge, record, commit) until
// every story passes, a budget runs out, or only a human can help.
package loop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/checks"
	"github.com/ralph-harness/ralph/internal/durable"
	"github.com/ralph-harness/ralph/internal/plural"
	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/internal/redact"
	"github.com/ralph-harness/ralph/internal/textcut"
	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
	"github.com/ralph-harness/ralph/templates"
)

// The three files, relative to the work directory.
const (
	PRDFile      = "prd.json"
	ProgressFile = "progress.txt"
	HarnessFile  = "harness.toml"
)

// Options configure a run of the loop.
type Options struct {
	// Dir is the work directory, an absolute path: the agent and the
	// checks of an iteration are given it (proc.DirVar), by which a ralph
	// started after this one was killed knows them from another loop's.
	Dir    string
	Config Config
	// Out receives the narration of the run and the agent's output; Err
	// receives warnings.
	Out io.Writer
	Err io.Writer
	// Quiet keeps the agent's and the checks' output off Out.
	Quiet bool
	// MaxIterations bounds this invocation (0: no bound), on top of the
	// run's own loop.max_iterations.
	MaxIterations int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Grace is how long a stopped agent or check gets between SIGINT and
	// SIGKILL; 0 means the packages' default.
	Grace time.Duration
	// Environ is the environment the agent and checks inherit (the checks
	// without the directories of its $PATH that the agent can write: see
	// checks.Run); nil means os.Environ().
	Environ []string
	// Jitter spreads a backoff wait; nil means a random ±20%.
	Jitter func(time.Duration) time.Duration
	// JSON prints events as JSON lines on Out, and the agent's output on
	// Err, for scripts.
	JSON bool
	// Watch keeps the loop up when nothing can run, waiting for prd.json
	// or harness.toml to change.
	Watch bool
	// AcceptChanges keeps what the guard watches as it is when an iteration
	// that a stopped ralph left unrecorded finds it changed (see
	// changedSince), instead of stopping for a person to look.
	AcceptChanges bool
	// inGit caches whether Dir is in a git work tree (gitTree), and
	// ignoredByGit whether it is in one that ignores it, and gitIndex
	// the path of git's index there.
	inGit        *bool
	ignoredByGit bool
	gitIndex     string
	// commitExcludes leave out of the run's commits the repositories with
	// no commit checked out that a commit refused (see gitCommit).
	commitExcludes []string
	// gitHead is the file git keeps HEAD in (see detached), and
	// detachedSaid whether the loop said that HEAD is detached.
	gitHead      string
	detachedSaid bool
	// said are the warnings warnOnce gave.
	said map[string]bool
	// bufs are the buffers the files are read into (buffers).
	bufs *buffers
	// redactor keeps secrets out of what the loop writes; built on first
	// use, from the environment, agent.env and pastEnv, the agent.env of
	// every harness.toml the run reloaded from.
	redactor *redact.Redactor
	pastEnv  []string
	// globs are Config.Guard's globs, compiled on first use (guardGlobs).
	globs *guardGlobs
	// OnEvent, when set, is told of every event before it is printed.
	OnEvent func(Event)
	// Reload reads harness.toml again; the loop calls it between
	// iterations when the file changed. nil: no hot reload.
	Reload func() (Config, error)
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Options) environ() []string {
	if o.Environ != nil {
		return o.Environ
	}
	return os.Environ()
}

func (o *Options) path(name string) string { return filepath.Join(o.Dir, name) }

// Run runs iterations until every story passes (nil), or returns why it
// stopped: a *StopError, an *InputError, or a runtime error.
func Run(ctx context.Context, o Options) (err error) {
	// Everything that can be wrong with the input is found before the
	// first write, so that bad input changes nothing, and told at once.
	tmpl, terr := o.template()
	// Watching, an empty list is one to wait on: a story added wakes it.
	load := o.loadStories
	if o.Watch {
		load = o.loadPRD
	}
	_, lerr := load()
	cerr := o.committer(ctx)
	if ctx.Err() != nil {
		cerr = nil // git was stopped, not refused
	}
	if err := errors.Join(terr, lerr, agent.Find(o.Config.Agent.Argv[0], o.Dir), o.Config.Agent.KeyError(o.environ()), cerr); err != nil {
		return err
	}
	// A `ralph task` edit that records an iteration a stopped ralph left
	// open holds the lock as long as that takes (see closeStopped): a
	// loop started meanwhile waits for it, where it refuses another loop
	// at once.
	ledger, err := progress.OpenWaiting(ctx, o.path(ProgressFile), briefWait, func() {
		o.warn("waiting for a `ralph task` edit, which records the iteration a stopped ralph left open in %s, to finish (at most %v)", o.Dir, briefWait)
	})
	if err != nil {
		switch {
		case errors.Is(err, progress.ErrLocked):
			return fmt.Errorf("%w (%s is locked by another process)", ErrLocked, o.Dir)
		case errors.Is(err, progress.ErrBrief):
			return fmt.Errorf("%w: it may be stuck (a git it runs, say); stop it, then run `ralph loop` again", err)
		case ctx.Err() != nil:
			return stopf(InterruptedStop, "interrupted before the first iteration; run `ralph loop` again to resume")
		}
		return err
	}
	// The records' syncs run in the background, in the order of the
	// records (see package durable); every one is done before Run returns.
	syncs := new(durable.Queue)
	ledger.QueueSyncs(syncs)
	defer func() {
		ledger.Close()
		serr := syncs.Wait()
		switch {
		case serr == nil:
		case err == nil:
			err = serr
		case !errors.Is(err, serr):
			// The records may not be on disk: that is the news.
			err = fmt.Errorf("%w (the loop had stopped: %v)", serr, err)
		}
	}()
	// Said first, before what resuming finds (an iteration a stopped
	// ralph left open is judged then): the files as this loop found them.
	totals, err := lastTotals(o.path(ProgressFile))
	if err != nil {
		return err
	}
	if f, err := o.loadPRD(); err == nil {
		ev := Event{Event: EventLoopStarted, Stories: ptr(len(f.Stories)), Passing: ptr(countPassing(f)),
			Iteration: totals.Iterations, Tokens: totals.Tokens}
		if totals.CostUSD > 0 {
			ev.CostUSD = ptr(totals.CostUSD)
		}
		o.emit(ev)
	}
	if err := proc.Adopt(); err != nil {
		o.warn("%v: what an agent leaves running out of its process group is not killed", err)
	}
	for _, w := range o.configWarnings(ctx) {
		o.warn("%s", w)
	}
	if w := LedgerConflict(o.Dir); w != "" {
		o.warn("%s", w)
	}
	if err := o.recover(ctx, ledger); err != nil {
		return err
	}
	if totals, err = lastTotals(o.path(ProgressFile)); err != nil {
		return err
	}
	// git.commit is read again in every iteration: a hot reload may
	// change it.
	committing := func() bool { return o.Config.Commit && o.gitTree(ctx) }
	if committing() {
		// git status runs the programs git's configuration names too.
		dirty := false
		undone, err := o.underGit(ctx, ledger, nil, "", func() { dirty = gitDirty(ctx, o.Dir) })
		if err != nil {
			if ctx.Err() != nil {
				// The signal cut the listing short: nothing failed.
				return stopf(InterruptedStop, "interrupted before the first iteration; run `ralph loop` again to resume")
			}
			return err
		}
		if lost := lostLines(undone); len(lost) > 0 {
			return lostToGit(lost)
		}
		if dirty {
			o.warn("the work tree has uncommitted changes: they will be part of the first iteration's commit")
		}
		if o.detached(ctx) {
			o.detachedSaid = true
			o.warn("HEAD is detached: the iterations' commits will be on no branch (check out a branch to keep them)")
		}
	}
	// Each iteration's commit carries the ledger up to the entry before its
	// own (an entry names its commit, so it cannot be in it); the last entry
	// is committed when the loop stops.
	first := totals.Iterations + 1
	defer func() {
		last := totals.Iterations
		if last < first || !committing() {
			return
		}
		msg := fmt.Sprintf("ralph: ledger of iteration %d", last)
		if last > first {
			msg = fmt.Sprintf("ralph: ledger of iterations %d-%d", first, last)
		}
		stop, ctx := ctx, context.WithoutCancel(ctx)
		if _, err := git(ctx, o.Dir, "check-ignore", "--quiet", "--", ProgressFile); err == nil {
			return // untracked and ignored: the person keeps the ledger out of git
		}
		if proc.Killed() {
			o.warn("commit of %s: %v", ProgressFile, errCommitSkipped)
			return
		}
		var cerr error
		undone, gerr := o.underGit(ctx, ledger, nil, "", func() { _, cerr = o.commit(stop, ProgressFile, msg) })
		if cerr != nil {
			o.warn("commit of %s: %v", ProgressFile, cerr)
		}
		if gerr != nil {
			o.warn("%v", gerr)
		}
		// The run's own stop stands; one that would say all is well does
		// not.
		if lost := lostLines(undone); len(lost) > 0 && err == nil {
			err = lostToGit(lost)
		}
	}()
	retries := 0    // problems in a row, for the backoff
	transients := 0 // transient errors in a row, for agent.max_retries
	loaded := o.harnessSum()
	// refused is why the version of harness.toml whose sum is loaded was
	// refused ("" when it was not): it is tried again between iterations,
	// as what it lacked (the template it names) may come, and said again
	// only when what is wrong changes.
	refused := ""
	// Watching, a file that cannot be used may be one a person's editor is
	// saving (removed and written again, or truncated and written): the
	// round begins again once the directory is quiet (see settler), and
	// only what is wrong then is said.
	saves := settler{o: &o}
	// The stories as last read, which the next read takes over where
	// they did not change (see prd.ParseReusing).
	var last *prd.File
	// The project as the last iteration left it (see iteration.listing),
	// for the next, which begins at once; any other way round drops it.
	var carried []fileInfo
	for n := 0; ; {
		if ctx.Err() != nil {
			return stopf(InterruptedStop, "interrupted between iterations; run `ralph loop` again to resume")
		}
		listed := carried
		carried = nil
		switch sum := o.harnessSum(); {
		case o.Reload == nil || bytes.Equal(sum, loaded) && (refused == "" || sum == nil):
		case sum == nil:
			if again, err := saves.settle(ctx); err != nil {
				return err
			} else if again {
				continue
			}
			// Said once: the sum of a file back in place differs from nil.
			loaded, refused = nil, ""
			o.warn("%s cannot be read any more, so the previous settings stay", HarnessFile)
		default:
			listed = nil // the settings may list the project otherwise
			changed := !bytes.Equal(sum, loaded)
			t, err := o.reload()
			if err != nil && changed {
				if again, err := saves.settle(ctx); err != nil {
					return err
				} else if again {
					continue
				}
			}
			loaded = sum
			switch {
			case err == nil:
				tmpl, refused = t, ""
				// The settings may name another template: its sum is
				// the one to compare with from now on.
				loaded = o.harnessSum()
			case changed || err.Error() != refused:
				refused = err.Error()
				o.warn("%s changed but cannot be used, so the previous settings stay: %v", o.settings(), err)
			}
		}
		// The story is picked from prd.json as read under its lock, which
		// the iteration holds on to until its marker (see iteration.run):
		// a `ralph task` edit is in the pick, or finds the story running.
		unlock := o.lockPRD()
		f, text, err := o.readStories(last)
		if err == nil {
			last = f
		}
		var input *InputError
		if o.Watch && errors.As(err, &input) {
			unlock()
			if again, err := saves.settle(ctx); err != nil {
				return err
			} else if again {
				continue
			}
			o.warn("%v", err)
			if err := o.waitForChange(ctx, PRDFile+" cannot be used"); err != nil {
				return err
			}
			saves.reset()
			continue
		}
		saves.reset()
		if err != nil {
			unlock()
			return err
		}
		if o.anySpent(f) {
			// Failed under the lock that Update takes, and picked from
			// the file as that leaves it.
			unlock()
			if err := o.failSpent(); err != nil {
				return err
			}
			continue
		}
		story, err := o.pick(f, totals, n)
		if story == nil {
			// Said, and waited on, without prd.json's lock.
			unlock()
			if err == nil {
				o.emit(Event{Event: EventAllPass, Stories: ptr(len(f.Stories)), Passing: ptr(len(f.Stories)),
					Message: plural.Of(len(f.Stories), "the story passes", "all %d stories pass")})
			}
		}
		var stop *StopError
		// The invocation's own budget (--once, --max-iterations) is one no
		// change can raise: spent, it leaves nothing to watch for. A limit
		// of harness.toml's is one a person can raise there, as a question
		// is one a person can answer in prd.json: watched for.
		spent := o.MaxIterations > 0 && n >= o.MaxIterations
		if story == nil && o.Watch && !spent && (err == nil || errors.As(err, &stop) && (stop.Kind == NeedsHuman || stop.Kind == Stalled || stop.Kind == LimitReached)) {
			why := "every story passes"
			if err != nil {
				why = err.Error()
			}
			if err := o.waitForChange(ctx, why); err != nil {
				return err
			}
			continue
		}
		if story == nil {
			return err
		}
		n++
		it := &iteration{o: &o, tmpl: tmpl, ledger: ledger, syncs: syncs, commit: committing(), totals: totals,
			retries: retries, transients: transients, listed: listed}
		err = it.run(ctx, f, story, text, unlock)
		if err == nil {
			carried = it.listing
		}
		totals = it.entry.Totals
		var wait *waitError
		switch {
		case errors.As(err, &wait):
			retries, transients = wait.retries, wait.transients
			// A limit reached stops the loop at the next pick: no wait
			// for an iteration that will not run.
			if o.limit(totals, n) != "" {
				continue
			}
			if err := o.wait(ctx, wait, &totals); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			retries, transients = 0, 0
		}
	}
}

// pick returns the next story to work on, or nil and why the loop stops
// (nil when every story passes).
func (o *Options) pick(f *prd.File, t progress.Totals, n int) (*prd.Story, error) {
	if f.Done() {
		return nil, nil
	}
	story := f.Next()
	if story == nil {
		return nil, noStory(f)
	}
	if reason := o.limit(t, n); reason != "" {
		return nil, limitReached(f, reason)
	}
	return story, nil
}

// limitReached is the stop for a limit reached with stories of f left.
func limitReached(f *prd.File, reason string) error {
	left := len(f.Stories) - countPassing(f)
	return stopf(LimitReached, "%s; %d of %s left", reason, left, plural.Of(len(f.Stories), "%d story", "%d stories"))
}

// limit says which limit the run has reached with totals t after n
// iterations of this invocation; "" for none.
func (o *Options) limit(t progress.Totals, n int) string {
	l := o.Config.Limits
	switch {
	case o.MaxIterations > 0 && n >= o.MaxIterations:
		return plural.Of(n, "1 iteration run, as asked", "%d iterations run, as asked")
	case l.MaxIterations > 0 && t.Iterations >= l.MaxIterations:
		return fmt.Sprintf("loop.max_iterations = %d reached (%s in progress.txt)", l.MaxIterations, plural.Of(t.Iterations, "1 iteration", "%d iterations"))
	case l.MaxDuration > 0 && t.Elapsed >= l.MaxDuration:
		return fmt.Sprintf("loop.max_duration = %s reached", l.MaxDuration)
	case l.MaxCostUSD > 0 && t.CostUSD >= l.MaxCostUSD:
		return fmt.Sprintf("loop.max_cost_usd = %g reached ($%.4f spent)", l.MaxCostUSD, t.CostUSD)
	case l.MaxTokens > 0 && t.Tokens >= l.MaxTokens:
		return fmt.Sprintf("loop.max_tokens = %d reached (%d used)", l.MaxTokens, t.Tokens)
	}
	return ""
}

// killOrphans kills what who left running out of its process group when
// it exited (a daemon, a child that called setsid), and says so: a process
// that outlives its step could change files after the guard looked, after
// the verdict, or after ralph is gone. One it could not kill is named as
// such, not as killed: it may still do all that.
func (o *Options) killOrphans(who string) {
	n, left, err := proc.KillOrphans()
	if err != nil {
		o.warn("%v", err)
	}
	switch {
	case left == 0 && n > 0:
		o.warn("%s left %s running; ralph killed %s", who,
			plural.Of(n, "a process", "%d processes"), plural.Of(n, "it", "them"))
	case left == n && n > 0:
		o.warn("%s left %s running; ralph could not kill %s", who,
			plural.Of(n, "a process", "%d processes"), plural.Of(n, "it", "them"))
	case left > 0:
		o.warn("%s left %d processes running; ralph could not kill %d of them", who, n, left)
	}
}

// anySpent reports whether a story of f may run but has no attempts left,
// which happens when loop.max_attempts is lowered (see failSpent).
func (o *Options) anySpent(f *prd.File) bool {
	return slices.ContainsFunc(f.Stories, func(s *prd.Story) bool { return o.spent(f, s) })
}

// failSpent fails, in prd.json, the stories that may run but have no
// attempts left (see anySpent): without it, each would get one attempt
// past the limit.
func (o *Options) failSpent() error {
	var failed []*prd.Story
	err := prd.Update(o.path(PRDFile), PRDFile, nil, func(cur *prd.File) error {
		failed = o.failSpentIn(cur)
		if len(failed) == 0 {
			return prd.ErrUnchanged
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range failed {
		o.warn("%s failed without another run: %s (`ralph task reset %s` gives it its attempts again)", s.ID, s.Failed, s.ID)
	}
	return nil
}

// preview changes f, in memory only, as the next `ralph loop` will before
// it picks a story, and returns the run's totals as that loop will start
// with them: the commands that show what the loop would do (next, prompt,
// status) see what it will see. A story judged in an iteration a stopped
// ralph left open loses the verdict (see resumeInFlight), the iteration
// counts, and the stories that may run but have no attempts left fail
// (see failSpentIn).
func (o *Options) preview(f *prd.File) (progress.Totals, error) {
	totals, err := lastTotals(o.path(ProgressFile))
	if err != nil {
		return totals, err
	}
	m, err := progress.InFlight(o.path(ProgressFile))
	if err == nil && m != nil {
		if held, err := progress.Held(o.path(ProgressFile)); err == nil && !held {
			if s := f.Story(m.StoryID); s != nil {
				undoVerdict(s, m)
			}
		}
		// Recorded, it takes its number; dropped, the next takes it.
		if m.Recorded() {
			totals.Iterations = max(totals.Iterations, m.Iteration)
		}
	}
	o.failSpentIn(f)
	return totals, nil
}

// failSpentIn fails, in f only, the stories that may run but have no
// attempts left, and returns them. The commands that show what the loop
// would do (next, prompt, status) see the stories as the loop will.
func (o *Options) failSpentIn(f *prd.File) []*prd.Story {
	var failed []*prd.Story
	for _, s := range f.Stories {
		if o.spent(f, s) {
			s.Failed = fmt.Sprintf("no attempts left: %d made, loop.max_attempts = %d", s.Attempts, o.Config.Limits.MaxAttempts)
			failed = append(failed, s)
		}
	}
	return failed
}

// spent reports whether s may run but has no attempts left. Without
// harness.toml's limits (max_attempts is at least 1), none is.
func (o *Options) spent(f *prd.File, s *prd.Story) bool {
	max := o.Config.Limits.MaxAttempts
	return max > 0 && s.Attempts >= max && f.State(s) == prd.StateTodo
}

// noStory is why no story of f, which is not done, can run: a stall when
// the stall breaker failed a story and nothing waits on a person, else a
// person's turn.
func noStory(f *prd.File) error {
	if stalled(f) {
		return stopf(Stalled, "no story can run: %s", waitingOnHumans(f))
	}
	return stopf(NeedsHuman, "no story can run: %s", waitingOnHumans(f))
}

// stalled reports whether the stall breaker is what stopped the run: no
// story waits for an answer, and every failed story was failed as stalled.
func stalled(f *prd.File) bool {
	any := false
	for _, s := range f.Stories {
		switch f.State(s) {
		case prd.StateBlocked:
			return false
		case prd.StateFailed:
			if !strings.HasPrefix(s.Failed, stalledPrefix) {
				return false
			}
			any = true
		}
	}
	return any
}

func countPassing(f *prd.File) int {
	n := 0
	for _, s := range f.Stories {
		if s.Passes {
			n++
		}
	}
	return n
}

// waitingOnHumans lists what stands in the loop's way, for the stop message.
func waitingOnHumans(f *prd.File) string {
	var parts []string
	for _, s := range f.Stories {
		switch f.State(s) {
		case "blocked":
			parts = append(parts, fmt.Sprintf("%s is blocked (%s)", s.ID, s.Blocked))
		case "failed":
			parts = append(parts, fmt.Sprintf("%s failed (%s)", s.ID, s.Failed))
		case "waiting":
			parts = append(parts, fmt.Sprintf("%s waits on %s", s.ID, strings.Join(f.WaitsOn(s), ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

// loadPRD reads prd.json; its messages name the file as the user knows it.
func (o *Options) loadPRD() (*prd.File, error) {
	f, err := prd.Read(o.path(PRDFile), PRDFile)
	if err != nil {
		return nil, o.prdError(err)
	}
	return f, nil
}

// lockPRD takes prd.json's lock (see prd.Lock) and returns its release.
// Without the file there is nothing to lock, nor to edit.
func (o *Options) lockPRD() (unlock func()) {
	unlock, err := prd.Lock(o.path(PRDFile))
	if err != nil {
		return func() {}
	}
	return unlock
}

// readStories is loadStories for the loop's pick, which holds prd.json's
// lock: the text it read is in the snapshot's buffer, and the snapshot
// taken under the same hold of the lock keeps it (see begin) rather than
// read the file again. last is what it returned the time before, which
// its caller is done with (see prd.ParseReusing).
func (o *Options) readStories(last *prd.File) (*prd.File, []byte, error) {
	b := o.buffers()
	text, err := readbuf.ReadFile(b.prd, o.path(PRDFile))
	b.prd = text
	if err != nil {
		return nil, nil, o.prdError(err)
	}
	f, err := prd.ParseReusing(text, PRDFile, last)
	if err != nil {
		return nil, nil, o.prdError(err)
	}
	if err := hasStories(f); err != nil {
		return nil, nil, err
	}
	return f, text, nil
}

// loadStories is loadPRD for what works on the stories: a file without any
// is bad input there, though `ralph task` can add to it and status show it.
func (o *Options) loadStories() (*prd.File, error) {
	f, err := o.loadPRD()
	if err == nil {
		err = hasStories(f)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// hasStories is the error for a prd.json without stories, which is bad
// input for what works on them; nil when f has some.
func hasStories(f *prd.File) error {
	if len(f.Stories) == 0 {
		return &InputError{Err: fmt.Errorf("%s: userStories is empty: there is nothing to do (add a story with `ralph task add`)", PRDFile)}
	}
	return nil
}

// prdError is what a failure to read prd.json means to the user: a
// missing or broken file is bad input; a file that cannot be read is not.
func (o *Options) prdError(err error) error {
	var unreadable *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &InputError{Err: fmt.Errorf("%s not found in %s (run `ralph init` to create one)", PRDFile, o.Dir)}
	case errors.As(err, &unreadable):
		return err
	}
	return &InputError{Err: err}
}

// settings names the files the loop's settings come from: harness.toml,
// and the prompt template it names.
func (o *Options) settings() string {
	if name := o.Config.PromptTemplateName; name != "" {
		return HarnessFile + " or " + name
	}
	return HarnessFile
}

// reload applies a changed harness.toml; nothing changes when it is bad.
func (o *Options) reload() (*templates.Template, error) {
	cfg, err := o.Reload()
	if err != nil {
		return nil, err
	}
	next := *o
	next.Config = cfg
	t, err := next.template()
	if err != nil {
		return nil, err
	}
	// As at the start: an agent that cannot be found is no setting to run
	// the next iteration with.
	if err := agent.Find(cfg.Agent.Argv[0], o.Dir); err != nil {
		return nil, err
	}
	if err := cfg.Agent.KeyError(o.environ()); err != nil {
		return nil, err
	}
	// Nor are commits turned on that git would refuse (no identity, a
	// merge under way). Commits on already were checked at the start: a
	// merge begun since is the commit's to meet, not a reason to refuse
	// another setting's change.
	if cfg.Commit && !o.Config.Commit {
		if err := next.committer(context.Background()); err != nil {
			return nil, err
		}
	}
	// Secrets of the new agent.env are kept out of what the loop writes
	// from now on, and those of every earlier one still are: the agent
	// may have kept them. Each once, however often harness.toml changes.
	for _, kv := range o.Config.Agent.Env {
		if !slices.Contains(o.pastEnv, kv) {
			o.pastEnv = append(o.pastEnv, kv)
		}
	}
	o.redactor, o.globs = nil, nil
	o.Config = cfg
	o.emit(Event{Event: EventReloaded, Message: o.settings() + " changed: reloaded"})
	return t, nil
}

func (o *Options) template() (*templates.Template, error) {
	if o.Config.PromptTemplate == "" && o.Config.PromptTemplateName == "" {
		return templates.Default(), nil
	}
	t, err := templates.Parse(o.Config.PromptTemplateName, o.Config.PromptTemplate)
	if err == nil {
		var samples []string
		samples, err = t.Samples()
		for _, s := range samples {
			if strings.TrimSpace(s) == "" {
				// A template of nothing but actions ({{/* … */}}) would
				// send the agent an empty prompt.
				err = errors.New("the template renders an empty prompt: the agent would get nothing to work on; write the prompt in it")
				break
			}
			if ParseClaim(s) != (Claim{}) {
				err = errors.New("the prompt ends with a reply tag: an agent that echoes its prompt would claim it; end the template with something else")
				break
			}
		}
	}
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("%s: %w", o.Config.PromptTemplateName, err)}
	}
	return t, nil
}

// lastTotals reads the run's running totals from the last complete ledger
// entry: resuming never re-reads the whole history.
func lastTotals(path string) (progress.Totals, error) {
	entries, err := progress.Tail(path, 1)
	if err != nil || len(entries) == 0 {
		return progress.Totals{}, err
	}
	return entries[0].RunTotals(), nil
}

// iteration is one turn of the loop, from prompt to ledger entry.
type iteration struct {
	o      *Options
	tmpl   *templates.Template
	ledger *progress.Ledger
	syncs  *durable.Queue // the ledger's syncs and prd.json's
	commit bool
	totals progress.Totals
	start  time.Time
	entry  progress.Entry
	// retries counts the problems in a row before this iteration, and
	// transients the transient errors among the last of them.
	retries, transients int
	// prev is the story's last attempt before this iteration, nil if none.
	prev *progress.Entry
	// outputs are the failed checks' kept outputs, by name, for the
	// fingerprint: the entry keeps only their last lines.
	outputs map[string]output
	// files are the protected files as they must stay, from the snapshot
	// before the agent ran: the guard of ralph's commit compares with them.
	files fileSnapshot
	// listed is the project as the last iteration's guard listed it after
	// its agent (its listing), when nothing ran there since: the snapshot
	// takes it rather than list the project again. nil: it lists.
	listed []fileInfo
	// listing is the project as this iteration's guard listed it after
	// the agent, when nothing ran there afterwards that may have changed
	// it (checks, a commit) and the guard put nothing back; nil otherwise.
	listing []fileInfo
}

// run runs an iteration of story, picked from f, which was parsed from
// text, prd.json as read under its lock. unlock releases the lock, which
// is held from that read to the iteration's marker, and from the marker
// to the snapshot: a `ralph task` edit, which looks for the marker under
// that lock, was in the pick, or finds the story running and refuses, or
// is in the snapshot. Without the file there is nothing to edit; the
// snapshot says so.
func (it *iteration) run(ctx context.Context, f *prd.File, story *prd.Story, text []byte, unlock func()) error {
	o := it.o
	start := o.now()
	it.start = start
	number := it.totals.Iterations + 1
	attempt := story.Attempts + 1
	it.entry = progress.Entry{
		Iteration:  number,
		Time:       start.UTC(),
		StoryID:    story.ID,
		StoryTitle: story.Title,
		Attempt:    attempt,
		// Until the agent has run: an iteration that ends before (its
		// start failed) records no exit status of it.
		AgentExit: -1,
	}
	prompt, prev, err := buildPrompt(o, it.tmpl, f, story, number, it.commit)
	it.prev = prev
	if err != nil {
		unlock()
		return fmt.Errorf("iteration %d (%s) did not begin: %w", number, story.ID, err)
	}
	// Said once the iteration has begun (its first marker), and not under
	// prd.json's lock: a reader of ralph's output that stalls it must not
	// stall `ralph task` too.
	started := func() {
		o.emit(Event{Event: EventIterationStarted, Iteration: number, Story: story.ID, Title: story.Title,
			Attempt: attempt, MaxAttempts: o.Config.Limits.MaxAttempts,
			Message: fmt.Sprintf("iteration %d · %s %s · attempt %d of %d", number, story.ID, story.Title, attempt, o.Config.Limits.MaxAttempts)})
	}

	baseline, take, err := it.priorBaseline(story)
	if err != nil {
		unlock()
		return err
	}
	mark := progress.Mark{Iteration: number, StoryID: story.ID, Attempt: attempt, Time: start.UTC()}
	if take {
		// The baseline checks may take as long as the agent: a marker
		// says they run (see progress.Mark.TakingBaseline).
		taking := mark
		taking.TakingBaseline = true
		// The test files too: the checks run tests an earlier agent
		// wrote (a teardown), which can delete one as the agent's can.
		before, err, berr := it.begin(ctx, taking, f, text, true)
		unlock()
		// The checks will have run: the file is read, and the project
		// listed, again.
		text, it.listed = nil, nil
		if berr != nil {
			return berr
		}
		started()
		ran := err == nil // the snapshot was taken: the checks ran
		if ran {
			baseline, err = it.takeBaseline(ctx, f, story, before)
		}
		if err != nil {
			if ctx.Err() == nil {
				return err
			}
			// Stopped before any check ran, or after the guard of
			// the checks undid what they did (takeBaseline returns
			// the context's error then): the files are as the marker
			// says, and this ralph ends the iteration itself, as it
			// records an interrupted agent's, so that an edit of
			// yours before the next loop is not taken for the
			// checks'. A guard that failed leaves the iteration to
			// the next loop, to compare.
			if !ran || err == ctx.Err() {
				if err := o.drop(it.ledger, taking); err != nil {
					return err
				}
			}
			return stopf(InterruptedStop, "interrupted during the baseline checks of iteration %d (%s); run `ralph loop` again to run it", number, story.ID)
		}
		unlock = o.lockPRD()
	}
	// From the marker on, the iteration ends in an entry, whatever
	// happens: if not written by this ralph, then by the next (see recover).
	// A baseline just taken goes into the marker too: it cannot be taken
	// again once the agent has worked, and a ralph killed before the entry
	// would lose it. Its excerpts were redacted when it was taken.
	mark.Baseline = it.entry.Baseline
	// A sync that failed since the last verdict stops the loop before
	// the agent works for nothing.
	serr := it.syncs.Err()
	snap, err, berr := it.begin(ctx, mark, f, text, true)
	if berr != nil {
		unlock()
		return berr
	}
	unlock()
	if !take {
		started()
	}
	if serr != nil {
		return it.failed(serr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return it.interrupted()
		}
		return it.failed(err)
	}
	it.files = snap.files
	// prd.json as it will be if the story passes is written while the
	// agent works: a verdict that says so then takes no write of its own.
	ahead := f.WriteAhead(o.path(PRDFile), story.ID, o.status(Verdict{Outcome: Done}, attempt))
	defer ahead.Close()
	res, err := it.runAgent(ctx, prompt, story.ID, number, attempt)
	o.killOrphans(byAgent)
	if err != nil {
		return it.failed(err)
	}
	// Redacted before the summary and learnings are cut to length: a
	// secret cut in two is past recognising. The message may be the end
	// of a longer one already, which Cut allows for.
	res.FinalMessage = o.secrets().Cut(res.FinalMessage)
	e := &it.entry
	e.AgentExit = res.ExitCode
	e.AgentDuration = res.Duration
	e.InputTokens, e.OutputTokens = res.InputTokens, res.OutputTokens
	e.CostUSD, e.CostKnown = res.CostUSD, res.CostKnown
	claim := ParseClaim(res.FinalMessage)
	if res.Stopped != "" {
		// A stopped agent's last words are not a final message.
		claim = Claim{}
	}
	e.Claim = claim.String()
	e.AgentNote = agentNote(res)
	if p := res.Problem; p != nil {
		// The service's failure is said in the agent's event as in the
		// entry. Its message quotes the agent, which may quote a key from
		// agent.env: it goes into errors that main prints. Its line may be
		// the first of the stderr ralph kept, cut off at its start.
		p.Message = o.secrets().Cut(p.Message)
		e.AgentNote = strings.TrimPrefix(e.AgentNote+" · ", " · ") + p.Kind.String() + ": " + p.Message
	}
	if res.Problem == nil {
		// A failed run's final message is an error, not a summary.
		report := ParseReport(res.FinalMessage)
		e.Summary, e.Learnings = report.Summary, report.Learnings
	}
	ev := Event{Event: EventAgentFinished, Iteration: number, Story: story.ID,
		ExitCode: ptr(res.ExitCode), Seconds: ptr(res.Duration.Seconds()), Claim: e.Claim, Note: e.AgentNote,
		InputTokens: res.InputTokens, OutputTokens: res.OutputTokens,
		Message: fmt.Sprintf("agent exited %d after %s%s", res.ExitCode, res.Duration.Round(100*time.Millisecond), claimNote(claim, e.AgentNote))}
	if res.CostKnown {
		ev.CostUSD = ptr(res.CostUSD)
	}
	o.emit(ev)

	// What the agent did is undone however the iteration ends, an
	// interrupt included.
	g, err := snap.guard(context.WithoutCancel(ctx), o, it.ledger, f, story.ID)
	if err != nil {
		return it.unguarded(err)
	}
	e.Tampered = append(e.Tampered, g.tampered...)
	for _, t := range g.tampered {
		o.warn("%s", t)
	}
	if res.Stopped == agent.StoppedInterrupted || ctx.Err() != nil {
		return it.interrupted()
	}
	if res.Problem != nil {
		return it.problem(ctx, *res.Problem)
	}

	var (
		failed []string
		ran    bool
	)
	g.prd, err = it.guardChecks(ctx, snap, g.prd, func() bool {
		failed, ran = it.runChecks(ctx, g.prd.Story(story.ID), baseline)
		return ran
	})
	if !ran && !it.commit {
		// Nothing runs in the project from here to the next snapshot but
		// ralph's records: that snapshot may take the guard's listing.
		it.listing = g.files
	}
	if err != nil {
		return it.unguarded(err)
	}
	if ctx.Err() != nil {
		return it.interrupted()
	}
	stopped := ""
	if res.Stopped != "" {
		stopped = e.AgentNote
	}
	// What was tampered with, for the verdict's reason: only the ratchet's
	// count, or only by the checks. A mark in git's index cleared is told
	// of, but fails nothing (see isMarkLine).
	counted := slices.DeleteFunc(slices.Clone(e.Tampered), isMarkLine)
	onlyFewerTests := !slices.ContainsFunc(counted, func(t string) bool {
		return !strings.HasSuffix(t, refusalEnd)
	})
	onlyByChecks := !slices.ContainsFunc(counted, func(t string) bool {
		return !strings.Contains(t, ": "+byChecks+" ")
	})
	v := Judge(Evidence{
		Claim:          claim,
		FailedRequired: failed,
		Known:          knownFailures(e.Checks),
		Tampered:       len(counted) > 0,
		FewerTests:     onlyFewerTests,
		ByChecks:       onlyByChecks,
		Stopped:        stopped,
		Attempt:        attempt,
		MaxAttempts:    o.Config.Limits.MaxAttempts,
		Lost:           lostLines(e.Tampered),
		Iteration:      number,
		StoryID:        story.ID,
	})
	if v.Outcome == Done {
		if v, err = it.answered(v, g.prd.Story(story.ID)); err != nil {
			return it.failed(err)
		}
	}
	if v.Outcome == Retry || v.Outcome == Failed {
		if v, err = it.stall(v, g.changed, len(g.tampered) > 0); err != nil {
			return it.failed(err)
		}
	}
	e.Outcome = v.Outcome
	if v.Outcome == Blocked {
		e.Question = v.Question
	}
	// A verdict on disk must find its iteration's marker there (see
	// recover): the marker's sync has run while the agent did.
	if err := it.syncs.Wait(); err != nil {
		return it.failed(err)
	}
	// The verdict goes into prd.json as it is now, under its lock: a
	// person's edits made while the checks ran are kept.
	err = prd.SetStatus(o.path(PRDFile), PRDFile, it.syncs, story.ID, o.status(v, attempt), ahead)
	if errors.Is(err, prd.ErrNoStory) {
		err = fmt.Errorf("%s: story %s was removed during the iteration", PRDFile, story.ID)
	}
	if err != nil {
		return it.failed(err)
	}
	it.judged(v.Reason)
	return it.record(ctx, fmt.Sprintf("%s %s (attempt %d): %s", story.ID, v.Outcome, attempt, story.Title))
}

// status is the status of a story after the verdict v on its attempt: the
// whole of it, whatever wrote to the file since the story was picked (when
// it was neither passing, blocked nor failed).
func (o *Options) status(v Verdict, attempt int) prd.Status {
	st := prd.Status{Attempts: attempt}
	switch v.Outcome {
	case Done:
		st.Passes = true
	case Blocked:
		// A question is not a failed attempt: the story gets all of
		// its attempts once a person answers.
		st.Attempts--
		st.Blocked = o.secrets().String(v.Question)
	case Failed:
		st.Failed = o.secrets().String(v.Reason)
	}
	return st
}

// runAgent starts the agent with the prompt and the task's environment.
func (it *iteration) runAgent(ctx context.Context, prompt, storyID string, number, attempt int) (agent.Result, error) {
	o, a := it.o, it.o.Config.Agent
	extra := append(append([]string{}, a.Env...),
		"RALPH_TASK_ID="+storyID,
		"RALPH_ITERATION="+strconv.Itoa(number),
		"RALPH_ATTEMPT="+strconv.Itoa(attempt),
		proc.DirVar+"="+o.Dir,
	)
	// The agent's output is shown as it comes, on stderr when stdout
	// carries --json events, with its secrets replaced as everywhere else
	// (the terminal may be a CI job's log).
	var live io.Writer = io.Discard
	if out := o.Out; !o.Quiet && out != nil {
		if o.JSON {
			out = o.Err
		}
		w := o.secrets().Writer(out)
		defer w.Flush()
		live = w
	}
	// The agent keeps the directories of $PATH that the checks run
	// without (see checks.Run): they are there for the project's
	// tools (./node_modules/.bin), and give the agent nothing it lacks, as
	// it can run what it writes by its path anyway. Only what judges its
	// work must not be the agent's to choose.
	res, err := agent.Run(ctx, agent.Options{
		Argv:        a.Argv,
		Dir:         o.Dir,
		Env:         agent.Environ(o.environ(), extra...),
		Prompt:      prompt,
		PromptArg:   a.PromptArg,
		PromptFlag:  a.PromptFlag,
		Timeout:     a.Timeout,
		IdleTimeout: a.IdleTimeout,
		Grace:       o.Grace,
		Output:      live,
		Format:      a.Format,
		Now:         o.Now,
	})
	if err != nil {
		return res, fmt.Errorf("start agent: %w", err)
	}
	return res, nil
}

func agentNote(res agent.Result) string {
	switch res.Stopped {
	case agent.StoppedTimeout:
		return "timed out (agent.timeout)"
	case agent.StoppedIdle:
		return "no output for agent.idle_timeout"
	case agent.StoppedInterrupted:
		return "interrupted"
	}
	if res.Lingered {
		return "ran on after its final result and was stopped"
	}
	if res.APIError {
		return "the agent reported an API error"
	}
	return ""
}

func claimNote(c Claim, note string) string {
	var parts []string
	switch {
	case c.Done:
		parts = append(parts, "claimed done")
	case c.Blocked:
		parts = append(parts, "asked: "+c.Question)
	default:
		parts = append(parts, "no claim")
	}
	if note != "" {
		parts = append(parts, note)
	}
	return " · " + strings.Join(parts, " · ")
}

// runChecks runs the configured checks and the story's own, records in
// the entry those that ended (an interrupt stops the rest), and returns the
// names of the required ones that failed, and whether any check ran.
func (it *iteration) runChecks(ctx context.Context, story *prd.Story, baseline []progress.Check) (failed []string, ran bool) {
	o := it.o
	cs := storyChecks(o.Config.Checks, story)
	if len(cs) == 0 {
		return nil, false
	}
	opts := o.checkOptions(it.entry.Iteration, it.entry.StoryID)
	// Only a check that failed in the story's baseline can fail as it
	// did then.
	watched := o.watchFailures(cs, &opts, func(c checks.Check) bool {
		return c.Baseline && slices.ContainsFunc(baseline, func(b progress.Check) bool { return b.Name == c.Name && !b.Passed })
	})
	// A failure as in the story's baseline does not count against it. It
	// is told as each check ends, for the narration; Run reports them all.
	known := make([]bool, len(cs))
	opts.Done = func(i int, r checks.Result) {
		if r.Stopped {
			return // it did not end: no verdict to tell
		}
		known[i] = watched[i] != nil && !r.Passed && r.Err == nil && knownFailure(baseline, r.Name, watched[i].failures(r.Output), ending(r))
		o.narrateCheck(it.entry.Iteration, it.entry.StoryID, r, known[i])
	}
	results := checks.Run(ctx, cs, opts)
	o.killOrphans(byChecks)
	for i, r := range results {
		if r.Stopped {
			// Cut short by an interrupt: the iteration is interrupted,
			// and the entry keeps only the checks that ended.
			continue
		}
		c := progress.Check{
			Name:     r.Name,
			Passed:   r.Passed,
			Optional: !r.Required,
			TimedOut: r.TimedOut,
			Duration: r.Duration,
			Tests:    max(r.Tests, 0),
		}
		if !r.Passed {
			c.Excerpt = r.Excerpt(excerptLines)
			if r.Err != nil {
				c.Excerpt = r.Err.Error()
			} else {
				if it.outputs == nil {
					it.outputs = map[string]output{}
				}
				it.outputs[r.Name] = output{r.Output, r.Cut, r.Lines}
			}
			c.Known = known[i]
			if r.Required && !c.Known {
				failed = append(failed, r.Name)
			}
		}
		it.entry.Checks = append(it.entry.Checks, c)
	}
	for _, t := range it.fewerTests() {
		// The count before may be from before a person's own removal of
		// tests: the ratchet cannot tell, and says how to start anew.
		o.warn("%s (if you removed or skipped tests yourself, rename the check in %s, or change a story's check's command: a new name starts its count anew)", t, HarnessFile)
		it.entry.Tampered = append(it.entry.Tampered, t)
	}
	return failed, true
}

// knownFailures names the required checks that failed as in the story's
// baseline.
func knownFailures(cs []progress.Check) []string {
	var names []string
	for _, c := range cs {
		if c.Known && !c.Optional {
			names = append(names, c.Name)
		}
	}
	return names
}

// fewerTests is the other half of the test ratchet: a required check that
// reports how many tests it ran may not pass, or fail as in the story's
// baseline, with fewer than its last such run, or its baseline, reported,
// nor reporting none (code that ends the test binary before its tests,
// say) when that one reported some. The count it is compared with is most
// often the iteration before's: a check that never reports one is looked
// for no further back than maxHistoryScan.
func (it *iteration) fewerTests() []string {
	// A run counts that decides the verdict: a required check that passed,
	// or failed as in the story's baseline (which does not count against
	// it, and so must not let tests go either).
	counted := func(c progress.Check) bool { return (c.Passed || c.Known) && !c.Optional }
	want := map[string]bool{}
	for _, c := range it.entry.Checks {
		if counted(c) {
			want[c.Name] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	before := map[string]int{}
	baseline := func(cs []progress.Check) {
		for _, c := range cs {
			if _, seen := before[c.Name]; want[c.Name] && !seen && c.Tests > 0 {
				before[c.Name] = c.Tests
			}
		}
	}
	// This iteration's baseline, taken before its agent ran, is the newest
	// count there is.
	baseline(it.entry.Baseline)
	progress.TailFunc(it.o.path(ProgressFile), maxHistoryScan, func(e progress.Entry) bool {
		// An entry's checks ran after its baseline's: the newest count of
		// a check is the first found.
		for _, c := range e.Checks {
			// A count the ratchet refused is no count to compare with:
			// the next attempt would pass with the tests it removed.
			refused := slices.ContainsFunc(e.Tampered, func(t string) bool { return isFewerTests(t, c.Name) })
			if want[c.Name] && counted(c) && !refused {
				if _, seen := before[c.Name]; !seen {
					before[c.Name] = c.Tests
				}
			}
		}
		baseline(e.Baseline)
		return len(before) < len(want)
	})
	var found []string
	for _, c := range it.entry.Checks {
		n := before[c.Name]
		switch {
		case !counted(c) || c.Tests >= n:
		case c.Tests == 0:
			found = append(found, fmt.Sprintf("check %s ran no test it reported, %d before: %s", c.Name, n, ratchetRule))
		default:
			found = append(found, fmt.Sprintf("check %s ran %s, %d before: %s", c.Name, plural.Of(c.Tests, "1 test", "%d tests"), n, ratchetRule))
		}
	}
	return found
}

// ratchetRule ends each of the test ratchet's tampered lines, and
// refusalEnd the lines of its refusals of a count.
const (
	ratchetRule = "tests may be added, not removed"
	refusalEnd  = " before: " + ratchetRule
)

// isFewerTests reports whether t, a tampered line, is the ratchet's refusal
// of check name's count (see fewerTests).
func isFewerTests(t, name string) bool {
	rest, ok := strings.CutPrefix(t, "check "+name+" ran ")
	return ok && strings.HasSuffix(rest, refusalEnd)
}

// checkOptions runs checks as an iteration does, narrating each as it ends
// with the tail of a failure's output. In an iteration (one numbered), they
// get its RALPH_ITERATION, RALPH_TASK_ID and RALPH_DIR, as the agent does:
// what they leave running after a kill of ralph is found by them (see
// recover). Out of one (`ralph check`), they get none of them, not even
// RALPH_DIR: run by an agent, they keep its, and are found with it.
func (o *Options) checkOptions(iteration int, storyID string) checks.Options {
	var extra []string
	if iteration > 0 {
		extra = []string{"RALPH_TASK_ID=" + storyID, "RALPH_ITERATION=" + strconv.Itoa(iteration), proc.DirVar + "=" + o.Dir}
	}
	return checks.Options{
		Dir:   o.Dir,
		Env:   agent.Environ(o.environ(), extra...),
		Grace: o.Grace,
		Now:   o.Now,
		// Before anything cuts or normalises the output: a secret cut in
		// two is past recognising, and its first part would be kept.
		Redact: o.secrets().Output,
		Done:   func(_ int, r checks.Result) { o.narrateCheck(iteration, storyID, r, false) },
	}
}

// workPath warns of the directories of $PATH that are relative or in the
// work directory, which the checks and ralph's git run without (see
// checks.Run and checks.LookPath): a check that needs a program from one
// fails, and this says why and what to do. "" when there are none.
func (o *Options) workPath() string {
	found := checks.WorkPath(o.environ(), o.Dir)
	if len(found) == 0 {
		return ""
	}
	shown := make([]string, len(found))
	for i, dir := range found {
		shown[i] = strconv.Quote(dir)
		if dir == "" {
			shown[i] += " (the current directory)"
		}
	}
	return fmt.Sprintf(plural.Of(len(found),
		"PATH has a directory that is relative or in the work directory (%s): the checks and ralph's git run without it, as the agent could put programs there; a check that needs a program of the project's can run it by a path that [guard] protect covers",
		"PATH has directories that are relative or in the work directory (%s): the checks and ralph's git run without them, as the agent could put programs there; a check that needs a program of the project's can run it by a path that [guard] protect covers"),
		strings.Join(shown, ", "))
}

// narrateCheck says how a check ended; known is a failure as in the
// story's baseline.
func (o *Options) narrateCheck(iteration int, storyID string, r checks.Result, known bool) {
	ev := checkEvent(iteration, storyID, r)
	ev.Known = known
	if known {
		ev.Message += ", as in the baseline: it does not count"
	}
	o.emit(ev)
}

// checkEvent is check.finished for r: how the check ended, with the tail
// of a failure's output.
func checkEvent(iteration int, storyID string, r checks.Result) Event {
	ev := Event{Event: EventCheckFinished, Iteration: iteration, Story: storyID, Check: r.Name, Passed: ptr(r.Passed),
		Status: r.Verdict(), Seconds: ptr(r.Duration.Seconds()), Message: r.Summary()}
	if !r.Passed && r.Err == nil {
		ev.Excerpt = r.Excerpt(narratedLines)
	}
	return ev
}

// narratedLines is how much of a failing check's output the narration shows.
const narratedLines = 8

// excerptLines is how much of a failing check's output the ledger keeps:
// enough for the next prompt to show the failure.
const excerptLines = 40

// storyChecks is the harness's checks followed by the story's own. A
// story's own check waits for the harness's checks that another names in
// its after: they are the steps the rest builds on (a build), and a
// story's check, which prd.json gives no after, runs what they make as
// much as any.
func storyChecks(base []checks.Check, s *prd.Story) []checks.Check {
	cs := append([]checks.Check{}, base...)
	if s == nil {
		return cs
	}
	var steps []string
	for _, c := range base {
		for _, name := range c.After {
			if !slices.Contains(steps, name) {
				steps = append(steps, name)
			}
		}
	}
	for _, run := range s.Checks {
		cs = append(cs, checks.Check{
			Name:     storyCheckName(s.ID, run),
			Run:      run,
			Timeout:  DefaultCheckTimeout,
			Required: true,
			After:    steps,
		})
	}
	return cs
}

// storyCheckName names a story's own check after the story and its command
// (US-001#3fa2b1), not its place in the list: the test ratchet goes by
// names, and a check removed or moved must not hand its count to another,
// while one whose command changed is a new check, its count started anew.
func storyCheckName(storyID, run string) string {
	sum := sha256.Sum256([]byte(run))
	return storyID + "#" + hex.EncodeToString(sum[:3])
}

// IsStoryCheckName reports whether name has the shape of a story's own
// check's name (see storyCheckName), which no check of harness.toml may take.
func IsStoryCheckName(name string) bool {
	id, sum, ok := strings.Cut(name, "#")
	return ok && id != "" && len(sum) == 6 && strings.Trim(sum, "0123456789abcdef") == ""
}

// problem records an iteration cut short by the agent's service and says
// what the loop does next: wait and run it again, or stop. It is not an
// attempt: the story's counters stay as they were.
func (it *iteration) problem(ctx context.Context, p agent.Problem) error {
	o, e := it.o, &it.entry
	// p's message is redacted, and in the entry's note (see run).
	e.Outcome = AgentFailed
	if p.Kind == agent.RateLimited {
		e.Outcome = RateLimited
	}
	e.Claim = ""
	retries, transients := it.retries+1, 0
	if p.Kind == agent.Transient {
		// Rate limits are waited out, whatever their number: only
		// server errors in a row count toward agent.max_retries.
		transients = it.transients + 1
	}
	var err error
	switch {
	case p.Kind == agent.Permanent:
		err = &AgentError{Problem: p}
	case transients > o.Config.Agent.MaxRetries:
		p.Message += fmt.Sprintf(" (%s in a row)", plural.Of(transients, "1 time", "%d times"))
		err = &AgentError{Problem: p}
	default:
		err = &waitError{problem: p, retries: retries, transients: transients}
	}
	it.judged(p.Message)
	if err := it.setAside(); err != nil {
		return it.failed(err)
	}
	if rerr := it.record(ctx, fmt.Sprintf("%s %s: %s", e.StoryID, e.Outcome, it.entry.StoryTitle)); rerr != nil {
		return rerr
	}
	return err
}

// waitError asks Run to wait before the next iteration.
type waitError struct {
	problem             agent.Problem
	retries, transients int // as the iteration counts them, this one included
}

func (e *waitError) Error() string { return e.problem.Kind.String() + ": " + e.problem.Message }

// wait sleeps until a rate limit lifts or a backoff passes, saying so on
// stderr. The wait counts toward loop.max_duration: one that would outlast
// it stops the loop instead.
func (o *Options) wait(ctx context.Context, w *waitError, totals *progress.Totals) error {
	now := o.now()
	d := backoff(o.Config.Agent.RetryBackoff, w.retries, o.Jitter)
	// A reset time already past (a CLI that repeats a stale one, a clock
	// ahead) is no reason to try again at once: that would spend every
	// iteration in a second. The backoff stands then.
	if reset := w.problem.ResetAt; reset.After(now) {
		d = reset.Sub(now)
	}
	if max := o.Config.Limits.MaxDuration; max > 0 && totals.Elapsed+d > max {
		return stopf(LimitReached, "the %s lifts only after loop.max_duration = %s: stopping instead of waiting %s", w.problem.Kind, max, d.Round(time.Second))
	}
	o.emit(Event{Event: EventWaiting, Reason: w.problem.Kind.String(), Note: w.problem.Message, Until: ptr(now.Add(d).UTC()),
		Seconds: ptr(d.Seconds()),
		Message: fmt.Sprintf("waiting for the %s to pass: %s, until %s (%s)",
			w.problem.Kind, w.problem.Message, now.Add(d).Format("15:04:05"), d.Round(time.Millisecond))})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return stopf(InterruptedStop, "interrupted while waiting for the %s; run `ralph loop` again to resume", w.problem.Kind)
	case <-t.C:
	}
	totals.Elapsed += d
	return nil
}

// backoff is the wait before retry n (from 1): base, doubling, spread by
// jitter so that many loops do not retry in step, and capped at maxBackoff,
// or at base when that is longer. At the cap the jitter spreads the waits
// below it, folded back rather than cut: cut, half of them would be the
// cap itself, in step again. A base longer than agent.MaxWait (harness.toml
// refuses one) is cut to it, as a reset the agent names is: spread, a base
// near the longest Duration would overflow into a negative wait, and the
// loop would retry at once.
func backoff(base time.Duration, n int, jitter func(time.Duration) time.Duration) time.Duration {
	base = min(base, agent.MaxWait)
	limit := max(base, maxBackoff)
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	if jitter == nil {
		d += time.Duration((rand.Float64()*0.4 - 0.2) * float64(d))
	} else {
		d = jitter(d)
	}
	if d > limit {
		d = 2*limit - d
	}
	return d
}

// baselineChecks are the checks with baseline = true.
func (o *Options) baselineChecks() []checks.Check {
	var cs []checks.Check
	for _, c := range o.Config.Checks {
		if c.Baseline {
			cs = append(cs, c)
		}
	}
	return cs
}

// baselineRun is what runs before a story's first attempt: the baseline
// checks, and the checks they wait for through after, baseline checks or
// not, and so on (in harness.toml's order). Left out, such a check would
// not run before the baseline check that needs what it makes (a build),
// which would judge what is not there, or stale, and its baseline would
// be no baseline of the story's code; run in the baseline, it blocks the
// baseline check on its failure as it does after the agent.
func (o *Options) baselineRun() []checks.Check {
	in := map[string]bool{}
	var add func(name string)
	add = func(name string) {
		if in[name] {
			return
		}
		in[name] = true
		for _, c := range o.Config.Checks {
			if c.Name == name {
				for _, a := range c.After {
					add(a)
				}
			}
		}
	}
	for _, c := range o.baselineChecks() {
		add(c.Name)
	}
	var cs []checks.Check
	for _, c := range o.Config.Checks {
		if in[c.Name] {
			cs = append(cs, c)
		}
	}
	return cs
}

// priorBaseline finds the story's baseline in the ledger, or says that it
// is to be taken now (take), before the story's first attempt.
func (it *iteration) priorBaseline(story *prd.Story) (b []progress.Check, take bool, err error) {
	o := it.o
	if len(o.baselineChecks()) == 0 {
		return nil, false, nil
	}
	// Taken once per story, before anything the agent did to it: an
	// iteration that was no attempt (a question, an interruption) must not
	// retake it over the agent's own changes. Nor may a story that has
	// entries and no baseline: it was lost (an older ralph, killed during
	// the first attempt, kept it in no marker), or a baseline check came
	// after the first attempt. Such a story has no known failures.
	// prd.json tells a story that ran from a new one even when its entries
	// are further back than the ledger is read: attempts or answers, not
	// notes, which people write before a story ever runs (isNew counts
	// them, for the previous attempt of a story unblocked by hand). In a
	// ledger read whole, though, a story without entries never ran: its
	// answer was to a person's question (`ralph task block`).
	path := o.path(ProgressFile)
	b, ran, err := baselineOf(path, story.ID)
	if err != nil || ran || story.Attempts > 0 {
		return b, false, err
	}
	if len(story.Answers) > 0 {
		if info, err := os.Stat(path); err == nil && info.Size() > maxHistoryScan {
			return nil, false, nil
		}
	}
	return nil, true, nil
}

// begin appends the marker m, with the digests of the guard's snapshot,
// which it returns (see guardedSums). All of the snapshot is taken before
// the marker but for progress.txt's copy, taken after it, so that the
// marker is no change. text is prd.json as readStories read it under the
// lock the caller holds, the text f was parsed from, which the snapshot
// keeps (nil: it reads the file, and compares f with it); tests is
// takeFiles', and the listing it may take is it.listed. When the
// snapshot fails (snapErr), the marker is appended all the same, without
// digests; err is the append's failure.
//
// The marker of baseline checks keeps them as the agent's does: the checks
// run the code the agent wrote, which can change what the guard watches
// and kill ralph as well as the agent can.
func (it *iteration) begin(ctx context.Context, m progress.Mark, f *prd.File, text []byte, tests bool) (s snapshot, snapErr, err error) {
	s, snapErr = takeWatched(ctx, it.o, text, tests, it.listed)
	if snapErr == nil {
		// prd.json as the snapshot has it: f, unless it changed since f
		// was read (the baseline checks ran; a person's `ralph task` edit
		// meanwhile). The text readStories handed over is f's own: it is not
		// compared with f again. One that does not parse has no digest.
		if text == nil && !f.ParsedFrom(s.prd) {
			f, _ = prd.Parse(s.prd, PRDFile)
		}
		s.parsed = f
		m.Guarded = guardedSums(s.harness, s.harnessErr == nil, f, m.StoryID, s.files)
	}
	if err := it.ledger.Begin(m); err != nil {
		return s, nil, err
	}
	if snapErr == nil {
		snapErr = s.takeProgress(it.o)
	}
	return s, snapErr, nil
}

// guardChecks runs the checks (run, which reports whether any ran) and undoes what
// they did, as the guard does after the agent: the three files and the
// protected files are compared with s (see guardAfter), and a protected
// file they changed and put back before they ended is told by its stamp,
// a directory of protected files they moved by its stamp and watch (see
// stamps). What was tampered with is warned of and goes into the
// entry. It returns prd.json as the verdict is to read it: read, the file
// as the iteration read it, when nothing changed it.
func (it *iteration) guardChecks(ctx context.Context, s snapshot, read *prd.File, run func() bool) (*prd.File, error) {
	o := it.o
	stamped, err := s.files.stampProtected(o.Dir)
	if err != nil {
		o.warnOnce("%v: a directory of protected files that the checks move away and put back goes unseen", err)
	}
	defer stamped.close()
	index := s.files.watchIndex(ctx, o)
	if !run() {
		return read, nil
	}
	touched := stamped.touched(o.Dir)
	moved, err := stamped.moved(o.Dir)
	if err != nil {
		o.warnOnce("%v: a directory of protected files that the checks moved away and put back may have gone unseen", err)
	}
	// s is this call's copy: the snapshot the caller keeps is unchanged.
	if s.files.untracked, err = index.untracked(context.WithoutCancel(ctx), o, s.files); err != nil {
		return nil, err
	}
	judged, tampered, err := s.guardAfter(context.WithoutCancel(ctx), o, it.ledger, read, it.entry.StoryID, byChecks)
	if err != nil {
		return nil, err
	}
	// After guardAfter, which may have put protected files' entries back
	// whole, their marks with them.
	marked, err := index.marked(context.WithoutCancel(ctx), o, s.files, byChecks)
	if err != nil {
		return nil, err
	}
	tampered = append(tampered, marked...)
	tampered = append(tampered, putBackInTime(touched, tampered)...)
	tampered = append(tampered, moved...)
	for _, t := range tampered {
		o.warn("%s", t)
	}
	it.entry.Tampered = append(it.entry.Tampered, tampered...)
	return judged, nil
}

// takeBaseline runs the story's baseline checks before its first attempt
// and records them in the entry. What the checks change of the three files
// and the protected files, and the test files they delete, is undone as
// after any checks (see guardAfter), by before, the snapshot taken with
// the marker of the checks: the snapshot the agent's guard compares with
// is taken after them. f is
// prd.json as the iteration read it. A stop that cuts the checks short
// makes no baseline: it returns ctx's error, once the guard has undone
// what they did. The checks the baseline checks wait for run before them
// (see baselineRun), and are narrated, but only the baseline checks are
// recorded: the others' failures always count.
func (it *iteration) takeBaseline(ctx context.Context, f *prd.File, story *prd.Story, before snapshot) ([]progress.Check, error) {
	o := it.o
	cs := o.baselineRun()
	opts := o.checkOptions(it.entry.Iteration, story.ID)
	opts.Done = func(_ int, r checks.Result) {
		if r.Stopped {
			return // it did not end: no verdict to tell
		}
		ev := checkEvent(it.entry.Iteration, story.ID, r)
		ev.Status = "baseline: " + ev.Status
		ev.Message = "baseline " + ev.Message + " (before the story's first attempt)"
		o.emit(ev)
	}
	watched := o.watchFailures(cs, &opts, func(c checks.Check) bool { return c.Baseline })
	var results []checks.Result
	if _, err := it.guardChecks(ctx, before, f, func() bool {
		results = checks.Run(ctx, cs, opts)
		o.killOrphans(byChecks)
		return true
	}); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		// Cut short, it is no baseline: the iteration is dropped (see
		// run) and the next one takes it again.
		return nil, ctx.Err()
	}
	for i, r := range results {
		if !r.Baseline {
			continue
		}
		c := progress.Check{Name: r.Name, Passed: r.Passed, TimedOut: r.TimedOut, Duration: r.Duration, Tests: max(r.Tests, 0)}
		if !r.Passed {
			// What failed, from the whole output (its secrets redacted),
			// normalised: what a later run is compared with.
			c.Excerpt = strings.Join(append(watched[i].failures(r.Output), ending(r)), "\n")
		}
		it.entry.Baseline = append(it.entry.Baseline, c)
	}
	return it.entry.Baseline, nil
}

// stall fingerprints an unsuccessful iteration and fails the story as
// stalled when the same failure has come loop.stall_after times in a row;
// changed are the files the agent changed, undid whether its guard undid
// any change (see stallReason).
func (it *iteration) stall(v Verdict, changed []string, undid bool) (Verdict, error) {
	o, e := it.o, &it.entry
	e.Fingerprint = fingerprint(*e, it.outputs, changed)
	k := o.Config.Limits.StallAfter
	if k <= 0 {
		return v, nil
	}
	// The last attempt, which the prompt found already, is the first that
	// would be counted: unless it is the same failure, there is no run of
	// them to count.
	n := 0
	if p := it.prev; p != nil && p.Outcome == Retry && p.Fingerprint == e.Fingerprint {
		var err error
		if n, err = repeats(o.path(ProgressFile), e.StoryID, e.Fingerprint); err != nil {
			return v, err
		}
		// A run of them reaches back no further than the story's
		// attempts: those before a `ralph task reset` are not counted.
		n = min(n, e.Attempt-1)
	}
	if n+1 < k {
		return v, nil
	}
	return Verdict{Outcome: Failed, Reason: stallReason(*e, n+1, len(changed) > 0, undid)}, nil
}

// failed records an iteration that ralph itself could not finish (a write
// failed, say), so that what the agent did and spent is never lost, and
// returns err.
func (it *iteration) failed(err error) error {
	it.entry.Outcome = AgentFailed
	it.entry.AgentNote = strings.TrimPrefix(it.entry.AgentNote+" · ", " · ") + "ralph: " + err.Error()
	it.judged("ralph: " + err.Error())
	if aerr := it.appendEntry(); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// judged tells the iteration's outcome, the entry's, and why: each
// iteration that the ledger records has its iteration.judged, verdict or
// not.
func (it *iteration) judged(reason string) { it.o.judged(&it.entry, reason) }

// judged is iteration.judged for e, an entry the ledger records: an
// iteration's own, or one a stopped ralph left open (see resumeInFlight).
func (o *Options) judged(e *progress.Entry, reason string) {
	o.emit(Event{Event: EventIterationJudged, Iteration: e.Iteration, Story: e.StoryID, Outcome: e.Outcome, Reason: reason,
		Message: fmt.Sprintf("%s → %s: %s", e.StoryID, e.Outcome, reason)})
}

// unguarded stops the loop when the guard could not look at, or undo, what
// the agent or the checks changed: the agent may have made it fail (a
// directory it made read-only, a limit on ralph's open files), and its
// changes may stand. So the iteration is not recorded here: its marker
// stays in flight, and the next `ralph loop` compares the files with the
// marker's digests before it records it (see changedSince).
func (it *iteration) unguarded(err error) error {
	return fmt.Errorf("iteration %d (%s): ralph could not check the files it guards: %w; the iteration stays unrecorded, and the next `ralph loop` compares them with what they were before the agent ran", it.entry.Iteration, it.entry.StoryID, err)
}

// interrupted records an iteration that a signal cut short. It is not an
// attempt: the story's counters stay as they were.
func (it *iteration) interrupted() error {
	// The claim stays when the agent finished and the checks were
	// stopped: a stopped agent has none (see run).
	it.entry.Outcome = Interrupted
	it.judged("ralph was stopped during the iteration")
	serr := it.setAside()
	if err := it.appendEntry(); err != nil || serr != nil {
		return errors.Join(serr, err)
	}
	return stopf(InterruptedStop, "interrupted during iteration %d (%s); run `ralph loop` again to resume", it.entry.Iteration, it.entry.StoryID)
}

// commit is gitCommit in the work directory, made whether or not stop is
// done: a commit ralph has begun is finished after the first signal, and
// stopped by the second (see gitCommit).
//
// Two failures are tried once more. A Ctrl-C or a hangup at the terminal
// goes to its whole foreground process group: to git and the programs it
// runs (a signer) as well as ralph, and git cannot be kept from it (it
// handles the signal itself, ignored or not). So a commit that a first
// signal cut short is made again, after it. And a commit that fails on an
// index.lock that no git holds (one killed during a commit left it: an
// agent's git that ralph stopped, say) clears it and tries once more:
// otherwise every commit of the run would fail. What git's programs (a
// filter the repository names, say) left running is killed after it.
func (o *Options) commit(stop context.Context, pathspec, msg string) (string, error) {
	if proc.Killed() {
		return "", errCommitSkipped
	}
	defer o.killOrphans("git")
	ctx := context.WithoutCancel(stop)
	stopping := stop.Err() != nil
	id, err := gitCommit(ctx, o.Dir, pathspec, msg, &o.commitExcludes)
	if err != nil && !proc.Killed() && (!stopping && stop.Err() != nil || hungUp(err)) {
		id, err = gitCommit(ctx, o.Dir, pathspec, msg, &o.commitExcludes)
	}
	if err != nil && !proc.Killed() && strings.Contains(err.Error(), "index.lock") {
		o.clearIndexLock(ctx)
		id, err = gitCommit(ctx, o.Dir, pathspec, msg, &o.commitExcludes)
	}
	if err != nil && proc.Killed() {
		return "", errCommitKilled // not git's "context canceled"
	}
	return id, err
}

// errCommitKilled is a commit that a second signal stopped, and
// errCommitSkipped one that it came before.
var (
	errCommitKilled  = errors.New("git was stopped by the second signal")
	errCommitSkipped = errors.New("not made: the second signal came before it")
)

// maxSubject is how long an iteration's commit's subject line may be.
const maxSubject = 100

// record commits the iteration's changes (when asked to) and appends the
// ledger entry naming the commit.
func (it *iteration) record(ctx context.Context, message string) error {
	o := it.o
	if it.commit {
		// The subject is one short line, as git's tools show it; what it
		// cut of a long title goes whole into the body.
		msg := "ralph: " + message
		if len(msg) > maxSubject {
			msg = textcut.OneLine(msg, maxSubject) + "\n\n" + message
		}
		if it.entry.Summary != "" {
			msg += "\n\n" + it.entry.Summary
		}
		// As in the ledger: git refuses a message with a NUL in it, and
		// the agent's summary may hold anything.
		msg = progress.Clean(msg)
		// An entry with no commit line is one whose commit was not tried.
		undone, err := o.underGit(ctx, it.ledger, &it.files, it.entry.StoryID, func() {
			id, err := o.commit(ctx, ".", msg)
			switch {
			case errors.Is(err, errCommitSkipped):
				// Not tried: no commit line.
				o.warn("commit: %v (the changes stay in the work tree)", err)
			case err != nil:
				o.warn("%v (the changes stay in the work tree)", err)
				it.entry.Commit = "none (commit failed)"
			case id == "":
				it.entry.Commit = "none (no changes)"
			default:
				it.entry.Commit = id
				o.emit(Event{Event: EventCommitted, Iteration: it.entry.Iteration, Story: it.entry.StoryID, Commit: id,
					Message: "committed " + id})
				if !o.detachedSaid && o.detached(ctx) {
					// The agent checked out a commit, say.
					o.detachedSaid = true
					o.warn("HEAD is detached (since the work of iteration %d): its commit %s and the next ones are on no branch; make a branch of them to keep them (git switch -c NAME)", it.entry.Iteration, id)
				}
			}
		})
		it.entry.Tampered = append(it.entry.Tampered, undone...)
		if err == nil && len(lostLines(undone)) > 0 {
			// After the verdict, which set the story aside only for
			// what the guards before it could not undo.
			err = it.setAside()
		}
		if err != nil {
			return errors.Join(err, it.appendEntry())
		}
	}
	return it.appendEntry()
}

func (it *iteration) appendEntry() error {
	e := &it.entry
	t := it.totals
	t.Iterations = e.Iteration
	t.Tokens = agent.AddTokens(t.Tokens, e.InputTokens, e.OutputTokens)
	t.CostUSD += e.CostUSD
	t.Elapsed += it.o.now().Sub(it.start)
	t.Lost += len(lostLines(e.Tampered))
	e.Totals = t
	return it.ledger.Append(it.o.secrets().entry(*e))
}

// Checks runs the harness's checks now, as an iteration would, followed by
// the checks of the story storyID when it is not empty. Warnings go to
// o.Err.
func Checks(ctx context.Context, o Options, storyID string) ([]checks.Result, error) {
	var story *prd.Story
	if storyID != "" {
		f, err := o.loadPRD()
		if err != nil {
			return nil, err
		}
		if story = f.Story(storyID); story == nil {
			return nil, &InputError{Err: fmt.Errorf("%s: no story %q", PRDFile, storyID)}
		}
	}
	// What a check leaves running out of its process group is killed when
	// the checks end, as in an iteration: it would otherwise run on after
	// the command is done.
	if err := proc.Adopt(); err != nil {
		o.warn("%v: what a check leaves running out of its process group is not killed", err)
	}
	// A check that needs a program from such a directory fails here as
	// in the loop: this says why.
	if w := o.workPath(); w != "" {
		o.warn("%s", w)
	}
	results := checks.Run(ctx, storyChecks(o.Config.Checks, story), o.checkOptions(0, storyID))
	o.killOrphans(byChecks)
	return results, nil
}
