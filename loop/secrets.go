package loop

import (
	"github.com/ralph-harness/ralph/internal/redact"
	"github.com/ralph-harness/ralph/progress"
)

// Redact returns s with the secrets ralph keeps out of what it writes (see
// secrets) replaced, for what a command says of it.
func (o *Options) Redact(s string) string { return o.secrets().String(s) }

// secrets is the redactor for the values of the secret-named variables the
// agent and the checks see: they never reach the ledger, prd.json or the
// events.
func (o *Options) secrets() secretRedactor {
	if o.redactor == nil {
		o.redactor = redact.NewNamed(o.Config.Agent.SecretEnv, o.environ(), o.pastEnv, o.Config.Agent.Env)
	}
	return secretRedactor{o.redactor}
}

type secretRedactor struct{ *redact.Redactor }

// Output redacts a check's output, which is the end of a longer one when
// cut.
func (r secretRedactor) Output(s string, cut bool) string {
	if cut {
		return r.Cut(s)
	}
	return r.String(s)
}

// entry returns e with every free text redacted.
func (r secretRedactor) entry(e progress.Entry) progress.Entry {
	e.StoryTitle = r.String(e.StoryTitle)
	e.AgentNote = r.String(e.AgentNote)
	e.Question = r.String(e.Question)
	e.Summary = r.String(e.Summary)
	e.Commit = r.String(e.Commit)
	e.Learnings = r.Strings(append([]string(nil), e.Learnings...))
	e.Tampered = r.Strings(append([]string(nil), e.Tampered...))
	e.Checks = r.checks(e.Checks)
	e.Baseline = r.checks(e.Baseline)
	return e
}

// checks returns a copy of cs with their excerpts redacted.
func (r secretRedactor) checks(cs []progress.Check) []progress.Check {
	cs = append([]progress.Check(nil), cs...)
	for i := range cs {
		cs[i].Excerpt = r.String(cs[i].Excerpt)
	}
	return cs
}
