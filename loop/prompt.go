package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralph-harness/ralph/checks"
	"github.com/ralph-harness/ralph/internal/textcut"
	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
	"github.com/ralph-harness/ralph/templates"
)

// Byte budgets for what goes into a prompt, so that it stays bounded however
// long the run has been and whatever the files hold.
const (
	maxHead        = 8 << 10
	maxDescription = 16 << 10
	maxNotes       = 4 << 10
	maxCriterion   = 1 << 10
	maxCriteria    = 30
	maxFailures    = 5
	maxFailure     = 4 << 10
	maxAnswers     = 10
	maxName        = 256 // the project's name, a story's id, a check's name, a protected glob
	maxChecks      = 30  // checks listed, and protected globs
	recentEntries  = 3
	maxRecent      = 2 << 10
	// maxHistoryScan bounds how far back the ledger is read to find this
	// story's previous attempt.
	maxHistoryScan = 4 << 20
)

// NextPrompt renders the prompt the next iteration would send, touching
// nothing. When no story is runnable it returns a nil error and an empty
// prompt if every story passes, or a *StopError saying why.
func NextPrompt(o Options) (string, error) {
	tmpl, err := o.template()
	if err != nil {
		return "", err
	}
	f, err := o.loadStories()
	if err != nil {
		return "", err
	}
	totals, err := o.preview(f)
	if err != nil {
		return "", err
	}
	if f.Done() {
		return "", nil
	}
	story := f.Next()
	if story == nil {
		return "", noStory(f)
	}
	if reason := o.limit(totals, 0); reason != "" {
		return "", limitReached(f, reason)
	}
	prompt, _, err := buildPrompt(&o, tmpl, f, story, totals.Iterations+1, o.Config.Commit && inWorkTree(context.Background(), o.Dir))
	return prompt, err
}

// buildPrompt gathers the prompt's data from the three files, each part cut
// to its budget, and renders it.
func buildPrompt(o *Options, tmpl *templates.Template, f *prd.File, s *prd.Story, number int, commit bool) (string, *progress.Entry, error) {
	p := templates.Prompt{
		Project:     cut(f.Project, maxName),
		Description: cut(f.Description, maxNotes),
		Story: templates.Story{
			ID:          cut(s.ID, maxName),
			Title:       cut(s.Title, maxCriterion),
			Description: cut(s.Description, maxDescription),
			Notes:       cut(s.Notes, maxNotes),
		},
		Iteration:   number,
		Attempt:     s.Attempts + 1,
		MaxAttempts: o.Config.Limits.MaxAttempts,
		Commit:      commit,
	}
	p.Protected = firstOf(o.Config.Guard.Protect, maxChecks, func(g string) string { return cut(g, maxName) },
		func(more string) string { return more + " in " + HarnessFile })
	p.Story.AcceptanceCriteria = firstOf(s.AcceptanceCriteria, maxCriteria, func(c string) string { return cut(c, maxCriterion) },
		func(more string) string { return more + " in " + PRDFile })
	// The newest answers, if there are too many: the last question is the
	// one the agent is waiting on.
	for _, a := range s.Answers[max(0, len(s.Answers)-maxAnswers):] {
		p.Story.Answers = append(p.Story.Answers, templates.Answer{Question: cut(a.Question, maxNotes), Answer: cut(a.Answer, maxNotes)})
	}
	cs := storyChecks(o.Config.Checks, s)
	runs := map[string]string{}
	for _, c := range cs {
		runs[c.Name] = cut(c.Run, maxCriterion)
	}
	p.Checks = firstOf(cs, maxChecks, func(c checks.Check) templates.Check {
		return templates.Check{Name: cut(c.Name, maxName), Run: runs[c.Name], Required: c.Required}
	}, func(more string) templates.Check {
		return templates.Check{Name: more, Run: "in " + HarnessFile + " and " + PRDFile, Required: true}
	})

	path := o.path(ProgressFile)
	head, err := progress.ReadHead(path, maxHead)
	if err != nil {
		return "", nil, err
	}
	p.Head = head
	recent, err := progress.Tail(path, recentEntries)
	if err != nil {
		return "", nil, err
	}
	for _, e := range recent {
		p.Recent = append(p.Recent, cut(recap(e), maxRecent))
	}
	prev, err := previousAttempt(path, s)
	if err != nil {
		return "", nil, err
	}
	if prev != nil {
		p.Previous = cut(recap(*prev), maxRecent)
		for _, c := range prev.Checks {
			// Only the failures that count are the agent's to fix: not an
			// optional check's, nor one as in the story's baseline.
			if !counts(c) || len(p.Failures) == maxFailures {
				continue
			}
			output := c.Excerpt
			if c.TimedOut {
				output = "[the check timed out and was stopped]\n" + output
			}
			p.Failures = append(p.Failures, templates.Failure{Name: cut(c.Name, maxName), Run: runs[c.Name], Output: cutHead(output, maxFailure)})
		}
	}
	prompt, err := tmpl.Render(p)
	if err != nil && o.Config.PromptTemplateName != "" {
		// The project's template rendered on every sample (see
		// Options.template), yet fails on this data: the file is the
		// problem, as it would have been before the first iteration.
		return "", nil, &InputError{Err: fmt.Errorf("%s: %w", o.Config.PromptTemplateName, err)}
	}
	// An agent that echoes its prompt must not claim what the prompt ends
	// with. A template whose own end is a reply tag is refused (see
	// Options.template); one that ends with the story's text (its
	// criteria, its notes, which the agent may write) gets a last line of
	// ralph's when that text is a tag.
	if err == nil && ParseClaim(prompt) != (Claim{}) {
		prompt += "\n(This is the end of the prompt.)\n"
	}
	return prompt, prev, err
}

// firstOf is the first n of items, each as one makes it, and when there
// are more, a last item that says how many more (made by more from "…and
// 12 more"): a list in the prompt is bounded however long it is.
func firstOf[T, R any](items []T, n int, one func(T) R, more func(string) R) []R {
	var list []R
	for i, it := range items {
		if i == n {
			return append(list, more(fmt.Sprintf("…and %d more", len(items)-i)))
		}
		list = append(list, one(it))
	}
	return list
}

// previousAttempt finds the story's last ledger entry, reading back from the
// end of the ledger only as far as maxHistoryScan: it reads only the
// entries' start markers, and parses the one entry it finds. A story with
// no attempts, no answers and no notes is new, or new again (`ralph task
// reset`): it has no previous attempt, and the ledger is not searched,
// which would read all of that far back in a long run. (A question asked
// on a first attempt leaves no attempt counted; its answer is in the
// answers, or in the notes when a person unblocked the story by hand.)
func previousAttempt(path string, s *prd.Story) (*progress.Entry, error) {
	if isNew(s) {
		return nil, nil
	}
	var found *progress.Entry
	err := progress.TailHeads(path, maxHistoryScan, func(h progress.Head) bool {
		if h.StoryID == s.ID && isAttempt(h.Outcome) {
			e := h.Entry()
			found = &e
			return false
		}
		return true
	})
	// The attempt found must be the one the story's count ends with (a
	// question counts none): after `ralph task reset`, which keeps the
	// answers, the count starts again, and the attempts before are not
	// this story's any more.
	if found != nil && found.Attempt != s.Attempts && (found.Outcome != Blocked || found.Attempt != s.Attempts+1) {
		found = nil
	}
	return found, err
}

// isNew reports whether s never ran, or was made new again: no attempts,
// no answers, no notes. prd.json says so whatever the ledger's length.
func isNew(s *prd.Story) bool {
	return s.Attempts == 0 && len(s.Answers) == 0 && s.Notes == ""
}

// isAttempt tells the outcomes of iterations that were attempts at their
// story from those cut short by a signal or by the agent's service.
func isAttempt(outcome string) bool {
	switch outcome {
	case Interrupted, RateLimited, AgentFailed:
		return false
	}
	return true
}

// counts reports whether c is a failure that counts against the story: a
// required check that failed, and not as in the story's baseline.
func counts(c progress.Check) bool {
	return !c.Passed && !c.Skipped && !c.Optional && !c.Known
}

// recap is a short account of a ledger entry for a prompt.
func recap(e progress.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- iteration %d · %s · attempt %d · %s", e.Iteration, e.StoryID, e.Attempt, e.Outcome)
	if e.Claim != "" {
		fmt.Fprintf(&b, " · the agent claimed %s", e.Claim)
	}
	if e.AgentNote != "" {
		fmt.Fprintf(&b, " · %s", e.AgentNote)
	}
	var failed, other []string
	for _, c := range e.Checks {
		name := c.Name
		if c.TimedOut {
			name += " (timed out)"
		}
		switch {
		case counts(c):
			failed = append(failed, name)
		case c.Known:
			other = append(other, name+" (as before the story began)")
		case !c.Passed && !c.Skipped:
			other = append(other, name+" (optional)")
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, " · failed checks: %s", strings.Join(failed, ", "))
	}
	if len(other) > 0 {
		fmt.Fprintf(&b, " · failures that do not count: %s", strings.Join(other, ", "))
	}
	for _, t := range e.Tampered {
		fmt.Fprintf(&b, "\n  tampering: %s", t)
	}
	if e.Summary != "" {
		fmt.Fprintf(&b, "\n  summary: %s", strings.ReplaceAll(e.Summary, "\n", "\n  "))
	}
	for _, l := range e.Learnings {
		fmt.Fprintf(&b, "\n  learning: %s", l)
	}
	return b.String()
}

// cutHead keeps the last n bytes of s, marked when cut: a failure's end
// says the most.
func cutHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "[…]" + textcut.Tail(s, n)
}
