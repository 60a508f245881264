package loop

import (
	"strings"

	"github.com/ralph-harness/ralph/internal/ansi"
	"github.com/ralph-harness/ralph/internal/textcut"
	"github.com/ralph-harness/ralph/prd"
)

// Claim is what the agent said about its task in its final message.
type Claim struct {
	Done     bool
	Blocked  bool
	Question string
}

// String names the claim as the ledger records it.
func (c Claim) String() string {
	switch {
	case c.Done:
		return "done"
	case c.Blocked:
		return "blocked"
	}
	return ""
}

// ParseClaim reads the reply tag from the agent's final message. A claim
// counts only when the tag is the last non-blank line of the message, so an
// agent that echoes the prompt or mentions the tag in prose claims nothing.
// The line is read as a terminal shows it: without its colours, and as its
// last redraw when carriage returns write it anew ("thinking…\r<ralph>…").
func ParseClaim(final string) Claim {
	text := strings.TrimRight(ansi.String(final), " \t\r\n")
	line := ansi.Redrawn(text[strings.LastIndexByte(text, '\n')+1:])
	line = strings.TrimSpace(line)
	inner, ok := strings.CutPrefix(line, "<ralph>")
	if !ok {
		return Claim{}
	}
	inner, ok = strings.CutSuffix(inner, "</ralph>")
	if !ok || strings.Contains(inner, "<ralph>") {
		return Claim{}
	}
	inner = strings.TrimSpace(inner)
	if inner == "done" {
		return Claim{Done: true}
	}
	if q, ok := strings.CutPrefix(inner, "blocked:"); ok {
		// The question is shown to a person (`ralph status`, `next`):
		// what could drive a terminal (an OSC title, a bell) or turn
		// the line around goes, as prd.json's validation wants it.
		if q = strings.TrimSpace(prd.PlainLine(q)); q != "" {
			return Claim{Blocked: true, Question: q}
		}
	}
	return Claim{}
}

// Report is what the agent's final message says besides its claim.
type Report struct {
	Summary   string
	Learnings []string
}

// Bounds on what is kept of the agent's report in the ledger.
const (
	maxSummary      = 1000
	maxSummaryLines = 12
	maxLearning     = 300
	maxLearnings    = 10
)

// ParseReport takes the summary and the "Learning:" lines from the agent's
// final message, dropping the reply tag, each bounded in size.
func ParseReport(final string) Report {
	var r Report
	var summary []string
	for _, line := range strings.Split(final, "\n") {
		trimmed := strings.TrimSpace(line)
		if l, ok := strings.CutPrefix(trimmed, "Learning:"); ok {
			if l = strings.TrimSpace(l); l != "" && len(r.Learnings) < maxLearnings {
				r.Learnings = append(r.Learnings, cut(l, maxLearning))
			}
			continue
		}
		if strings.HasPrefix(trimmed, "<ralph>") && strings.HasSuffix(trimmed, "</ralph>") {
			continue
		}
		summary = append(summary, strings.TrimRight(line, " \t\r"))
	}
	// The end of a message is where an agent sums up; a plain agent's final
	// message is the tail of everything it printed.
	if len(summary) > maxSummaryLines {
		summary = summary[len(summary)-maxSummaryLines:]
	}
	r.Summary = cut(strings.TrimSpace(strings.Join(summary, "\n")), maxSummary)
	return r
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string { return textcut.Head(s, n, " …[cut]") }

// Outcomes of an iteration, as the ledger records them.
const (
	Done        = "done"
	Retry       = "retry"
	Failed      = "failed"
	Blocked     = "blocked"
	Interrupted = "interrupted"
	// RateLimited and AgentFailed record iterations cut short by the
	// agent's service: they are not attempts at the story.
	RateLimited = "rate-limited"
	AgentFailed = "error"
)

// Verdict is the judge's decision on one iteration.
type Verdict struct {
	Outcome string
	// Reason says why, in a few words, for people.
	Reason string
	// Question is what a blocked story asks of a person: the agent's
	// question, or ralph's about a change it could not undo.
	Question string
}

// Evidence is what the judge looks at: never the agent's word alone.
type Evidence struct {
	Claim          Claim
	FailedRequired []string // names of required checks that failed
	Known          []string // names of checks that failed as in the story's baseline
	Tampered       bool
	FewerTests     bool   // the only tampering found: a check ran fewer tests than before
	ByChecks       bool   // the tampering found was the checks', not the agent's
	Stopped        string // why the agent was stopped, if it was
	Attempt        int    // this attempt's number, from 1
	MaxAttempts    int
	// Lost are the tampered lines of changes the guard could not undo
	// (see isLost). Iteration and StoryID name them in the question.
	Lost      []string
	Iteration int
	StoryID   string
}

// Judge decides an iteration's outcome. The harness decides: a claim of done
// counts only when every required check passes and nothing protected was
// touched. A change that ralph could not undo sets the story aside for a
// person, whatever else happened: another attempt would find it standing.
func Judge(e Evidence) Verdict {
	v := judge(e)
	if v.Outcome == Retry && e.Attempt >= e.MaxAttempts {
		return Verdict{Outcome: Failed, Reason: v.Reason + "; no attempts left"}
	}
	return v
}

func judge(e Evidence) Verdict {
	switch {
	case len(e.Lost) > 0:
		return Verdict{Outcome: Blocked, Reason: lostReason(len(e.Lost)),
			Question: lostQuestion(e.Iteration, e.StoryID, e.Lost, e.Claim.Question)}
	case e.Claim.Blocked:
		return Verdict{Outcome: Blocked, Reason: "the agent asked: " + e.Claim.Question, Question: e.Claim.Question}
	case e.Stopped != "":
		return Verdict{Outcome: Retry, Reason: "the agent was stopped: " + e.Stopped}
	case e.Tampered && e.FewerTests:
		return Verdict{Outcome: Retry, Reason: "a check ran fewer tests than before"}
	case e.Tampered && e.ByChecks:
		return Verdict{Outcome: Retry, Reason: "the checks changed protected files"}
	case e.Tampered:
		return Verdict{Outcome: Retry, Reason: "the agent changed protected files"}
	case len(e.FailedRequired) > 0:
		reason := "check " + strings.Join(e.FailedRequired, ", ") + " failed"
		if len(e.FailedRequired) > 1 {
			reason = "checks " + strings.Join(e.FailedRequired, ", ") + " failed"
		}
		if e.Claim.Done {
			reason = "claimed done but " + reason
		}
		return Verdict{Outcome: Retry, Reason: reason}
	case !e.Claim.Done:
		return Verdict{Outcome: Retry, Reason: "the agent did not claim done"}
	}
	if len(e.Known) > 0 {
		return Verdict{Outcome: Done, Reason: "claimed done and every required check passes, but for " +
			strings.Join(e.Known, ", ") + ", which failed as in the baseline"}
	}
	return Verdict{Outcome: Done, Reason: "claimed done and every required check passes"}
}
