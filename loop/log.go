package loop

import (
	"time"

	"github.com/ralph-harness/ralph/progress"
)

// EntryReport is one ledger entry as `ralph log --json` prints it: a stable
// schema for scripts, documented in the README. Fields that do not apply are
// left out, except the counters, checks and totals, which are always there.
type EntryReport struct {
	Iteration    int           `json:"iteration"`
	Time         string        `json:"time,omitempty"` // RFC 3339, UTC
	Story        string        `json:"story"`
	Title        string        `json:"title,omitempty"`
	Outcome      string        `json:"outcome"`
	Attempt      int           `json:"attempt,omitempty"`
	AgentExit    int           `json:"agentExit"`
	AgentSeconds float64       `json:"agentSeconds"`
	Claim        string        `json:"claim,omitempty"`
	AgentNote    string        `json:"agentNote,omitempty"`
	InputTokens  int64         `json:"inputTokens"`
	OutputTokens int64         `json:"outputTokens"`
	CostUSD      *float64      `json:"costUSD,omitempty"` // absent when the agent does not report cost
	Checks       []CheckReport `json:"checks"`
	Tampered     []string      `json:"tampered,omitempty"`
	Commit       string        `json:"commit,omitempty"`
	Question     string        `json:"question,omitempty"`
	Summary      string        `json:"summary,omitempty"`
	Learnings    []string      `json:"learnings,omitempty"`
	Totals       Totals        `json:"totals"`
}

// CheckReport is one check of an EntryReport.
type CheckReport struct {
	Name     string  `json:"name"`
	Passed   bool    `json:"passed"`
	Skipped  bool    `json:"skipped,omitempty"`
	Optional bool    `json:"optional,omitempty"`
	TimedOut bool    `json:"timedOut,omitempty"`
	Known    bool    `json:"known,omitempty"` // failed as in the story's baseline: not against the verdict
	Seconds  float64 `json:"seconds"`
	Excerpt  string  `json:"excerpt,omitempty"`
}

// ReportEntry turns a ledger entry into its EntryReport.
func ReportEntry(e progress.Entry) EntryReport {
	r := EntryReport{
		Iteration:    e.Iteration,
		Story:        e.StoryID,
		Title:        e.StoryTitle,
		Outcome:      e.Outcome,
		Attempt:      e.Attempt,
		AgentExit:    e.AgentExit,
		AgentSeconds: e.AgentDuration.Seconds(),
		Claim:        e.Claim,
		AgentNote:    e.AgentNote,
		InputTokens:  e.InputTokens,
		OutputTokens: e.OutputTokens,
		Checks:       []CheckReport{},
		Tampered:     e.Tampered,
		Commit:       e.Commit,
		Question:     e.Question,
		Summary:      e.Summary,
		Learnings:    e.Learnings,
		Totals:       totalsOf(e.Totals),
	}
	if !e.Time.IsZero() {
		r.Time = e.Time.UTC().Format(time.RFC3339)
	}
	if e.CostKnown {
		c := e.CostUSD
		r.CostUSD = &c
	}
	for _, c := range e.Checks {
		r.Checks = append(r.Checks, CheckReport{
			Name:     c.Name,
			Passed:   c.Passed,
			Skipped:  c.Skipped,
			Optional: c.Optional,
			Known:    c.Known,
			TimedOut: c.TimedOut,
			Seconds:  c.Duration.Seconds(),
			Excerpt:  c.Excerpt,
		})
	}
	return r
}
