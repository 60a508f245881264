package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralph-harness/ralph/agent"
	"github.com/ralph-harness/ralph/internal/plural"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/progress"
)

// Validation is what `ralph validate` found in the files besides errors.
type Validation struct {
	Stories  int
	Entries  int
	Torn     int
	Warnings []string
}

// Validate checks prd.json, progress.txt and the prompt template against
// cfg, reporting every problem at once. It changes nothing.
func Validate(o Options) (Validation, error) {
	var v Validation
	var errs []error
	var unchecked []string // the stories with no check of their own
	read := false
	if f, err := o.loadStories(); err != nil {
		errs = append(errs, err)
	} else {
		v.Stories, read = len(f.Stories), true
		for _, s := range f.Stories {
			if s.Passes && (s.Blocked != "" || s.Failed != "") {
				v.Warnings = append(v.Warnings, fmt.Sprintf("%s: %s passes but is also marked blocked or failed", PRDFile, s.ID))
			}
			if len(s.Checks) == 0 {
				unchecked = append(unchecked, s.ID)
			}
		}
	}
	if _, err := o.template(); err != nil {
		errs = append(errs, err)
	} else if a := o.Config.Agent; a.PromptArg && read {
		// The loop would fail on a prompt too long for an argument: said
		// now of the next one (the others' depend on what comes before).
		if p, err := NextPrompt(o); err == nil && p != "" {
			if err := agent.CheckPromptArg(a.PromptFlag, p); err != nil {
				v.Warnings = append(v.Warnings, fmt.Sprintf("%s: agent.prompt = \"arg\": the next iteration's prompt cannot be passed: %v", HarnessFile, err))
			}
		}
	}
	if err := o.committer(context.Background()); err != nil {
		errs = append(errs, err)
	}
	v.Warnings = append(v.Warnings, o.configWarnings(context.Background())...)
	switch {
	case len(o.Config.Checks) > 0 || read && len(unchecked) == 0:
	case !read || len(unchecked) == v.Stories:
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: no [[checks]]: the judge can only take the agent's word", HarnessFile))
	default:
		// Stories with checks of their own are judged by them.
		names := unchecked
		if len(names) > 5 {
			names = append(names[:5:5], "…")
		}
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: no [[checks]]: for the stories with no checks of their own (%s), the judge can only take the agent's word",
			HarnessFile, strings.Join(names, ", ")))
	}
	file, _, err := readbuf.OpenFile(o.path(ProgressFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: missing; `ralph loop` will create it", ProgressFile))
	case err != nil:
		errs = append(errs, err)
	default:
		// Counted as they are read: a long ledger is not held whole, nor
		// read twice for the conflict's markers.
		entries := 0
		conflict := &conflictWatch{line: 1}
		head, torn, err := progress.Scan(io.TeeReader(file, conflict), func(progress.Entry) error {
			entries++
			return nil
		})
		file.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", ProgressFile, err))
		}
		if len(head) > maxHead {
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s: the head (the notes before the ledger) is %d bytes: only its first %d reach the agent's prompt", ProgressFile, len(head), maxHead))
		}
		v.Entries, v.Torn = entries, torn
		if conflict.found > 0 {
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s:%d: a merge conflict's marker: the entries around it may be torn or twice; resolve the conflict (keep both sides' entries, in order)", ProgressFile, conflict.found))
		}
		if torn > 0 {
			v.Warnings = append(v.Warnings, fmt.Sprintf("%s: %s skipped (an append was cut short)", ProgressFile, plural.Of(torn, "1 torn ledger entry", "%d torn ledger entries")))
		}
		switch m, err := progress.InFlight(o.path(ProgressFile)); {
		case err != nil:
			errs = append(errs, err)
		case m != nil:
			note, _ := o.openIteration(m)
			v.Warnings = append(v.Warnings, note)
		}
	}
	// Each error says what it is: bad input (exit 2) or a file that could
	// not be read (exit 1), as for the commands that read the files.
	return v, errors.Join(errs...)
}

// openIteration says what becomes of iteration m, which has a marker and no
// entry, and whether a running loop has it (else the next `ralph loop`
// closes it, or stops for a person first: see resumeInFlight).
func (o *Options) openIteration(m *progress.Mark) (note string, running bool) {
	what, them, next := "started", "it", "records it as interrupted"
	// Who changed what the guard watches, by the marker's digests: the
	// agent, or the baseline checks, which run the agent's code.
	who, began, closing := "the agent changed", "the agent began", "recording"
	if !m.Recorded() {
		what, them, next = "started its baseline checks", "them", "drops it (the next iteration takes its number)"
		who, began, closing = "they changed", "they began", "dropping"
	}
	what = fmt.Sprintf("%s: iteration %d (%s) %s", ProgressFile, m.Iteration, m.StoryID, what)
	switch held, err := progress.Held(o.path(ProgressFile)); {
	case err != nil:
		return what + " and has no entry: a ralph loop is running " + them + ", or was stopped, and the next `ralph loop` " + next, false
	case held:
		return what + ": the ralph loop running in " + o.Dir + " is running " + them, true
	}
	switch changed, err := o.changedSince(context.Background(), m); {
	case err != nil:
		return fmt.Sprintf("%s and has no entry: ralph was stopped during %s, and the next `ralph loop` stops before %s it: %v", what, them, closing, err), false
	case len(changed) > 0:
		return fmt.Sprintf("%s and has no entry: ralph was stopped before it could check what %s, and files it guards are not as they were when %s: %s. The next `ralph loop` stops for a person (exit 5): put back what is not yours, or keep them all with `ralph loop --accept-changes`", what, who, began, strings.Join(changed, ", ")), false
	}
	return what + " and has no entry: ralph was stopped during " + them + ", and the next `ralph loop` " + next, false
}

// conflictTail is how much of the ledger's end LedgerConflict reads.
const conflictTail = 64 << 10

// LedgerConflict warns of a merge conflict's marker in the last 64 KiB of
// the ledger in dir, where a merge of two branches' runs leaves one: the
// entries around it may be torn or twice, and the loop, status and log
// would take them as they are. "" when there is none, or the ledger cannot
// be read (the reader says why). validate reads the whole file.
func LedgerConflict(dir string) string {
	f, info, err := readbuf.OpenFile(filepath.Join(dir, ProgressFile))
	if err != nil {
		return ""
	}
	defer f.Close()
	off := max(info.Size()-conflictTail, 0)
	buf := make([]byte, info.Size()-off)
	n, _ := f.ReadAt(buf, off)
	buf = buf[:n]
	if off > 0 {
		// The first line is cut: only whole lines are looked at.
		_, buf, _ = bytes.Cut(buf, []byte("\n"))
	}
	w := &conflictWatch{line: 1}
	w.Write(buf)
	if w.found == 0 {
		return ""
	}
	return fmt.Sprintf("%s: a merge conflict's marker near its end: the entries around it may be torn or twice; resolve the conflict (keep both sides' entries, in order)", ProgressFile)
}

// conflictWatch finds, in what is written to it, the first line that is a
// marker git leaves around a conflict it could not merge ("<<<<<<< ",
// ">>>>>>> "; not "=======", which a heading of the notes may be). A
// ledger merged from two branches reads without an error, entries torn or
// not.
type conflictWatch struct {
	line  int    // the number of the line being written, from 1
	start []byte // its first bytes, as many as a marker has
	found int    // the first marker's line; 0 while none is
}

func (w *conflictWatch) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && w.found == 0 {
		end := bytes.IndexByte(p, '\n')
		rest := p
		if end >= 0 {
			rest = p[:end]
		}
		if k := len("<<<<<<< ") - len(w.start); k > 0 {
			w.start = append(w.start, rest[:min(k, len(rest))]...)
			if s := string(w.start); s == "<<<<<<< " || s == ">>>>>>> " {
				w.found = w.line
			}
		}
		if end < 0 {
			break
		}
		w.line, w.start, p = w.line+1, w.start[:0], p[end+1:]
	}
	return n, nil
}

// configWarnings are the settings that cannot do here what they say, for
// the start of `ralph loop` and for `ralph validate`.
func (o *Options) configWarnings(ctx context.Context) []string {
	ws := o.unreported()
	if w := o.workPath(); w != "" {
		ws = append(ws, w)
	}
	switch {
	case !o.Config.CommitAsked || o.gitTree(ctx):
	case o.ignoredByGit: // as gitTree found it
		ws = append(ws, fmt.Sprintf("%s: git.commit = true, but git ignores %s (a .gitignore of the repository it is in): no iteration will be committed, and ralph lists its files itself; take it out of .gitignore to have them committed, or set git.commit = false", HarnessFile, o.Dir))
	default:
		ws = append(ws, fmt.Sprintf("%s: git.commit = true, but %s is not in a git work tree (or git is missing): no iteration will be committed; run `git init` to have them committed, or set git.commit = false", HarnessFile, o.Dir))
	}
	return ws
}

// unreported warns of the limits that can never stop the run, as the
// agent's output says nothing of what they count: loop.max_cost_usd when
// it says no cost, loop.max_tokens when it says no tokens either.
func (o *Options) unreported() []string {
	a, l := o.Config.Agent, o.Config.Limits
	tokens := a.Format.ReportsTokens()
	var ws []string
	if l.MaxCostUSD > 0 && a.NoCost != "" {
		bound := "loop.max_tokens or loop.max_iterations"
		if !tokens {
			bound = "loop.max_iterations or loop.max_duration"
		}
		ws = append(ws, fmt.Sprintf("%s: loop.max_cost_usd = %g never stops the run: %s; bound it with %s", HarnessFile, l.MaxCostUSD, a.NoCost, bound))
	}
	if l.MaxTokens > 0 && !tokens {
		ws = append(ws, fmt.Sprintf("%s: loop.max_tokens = %d never stops the run: the agent's output, plain text, says no tokens; bound it with loop.max_iterations or loop.max_duration", HarnessFile, l.MaxTokens))
	}
	return ws
}
