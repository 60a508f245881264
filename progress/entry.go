// Package progress reads and appends progress.txt, ralph's durable session log.
//
// The file is a free-text head that humans write (by convention a
// "## Codebase Patterns" section), followed by the ledger: one entry per loop
// iteration, appended by ralph only. An entry is plain text a person can read
// and ralph can parse back. Every entry carries running totals, so resuming
// needs only the last complete entry, which Tail finds by reading the file
// backwards: its cost does not grow with the length of the ledger.
//
// ralph may be killed in the middle of an append. A torn entry (a start marker
// without its end marker) is skipped by every reader, and the next append
// starts on a fresh line.
package progress

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ralph-harness/ralph/internal/plural"
)

// Check is the result of one check command in an iteration.
type Check struct {
	Name     string
	Passed   bool
	Skipped  bool
	Optional bool // not required: a failure does not block done
	TimedOut bool
	// Known marks a failure the baseline had before the story's first
	// attempt: it does not block the story.
	Known bool
	// Tests is how many tests the check's output reported ran (skipped
	// ones did not); 0 when it reported none, or when the line is an
	// older ralph's, whose count took in skipped tests (see parseCheck).
	Tests    int
	Duration time.Duration
	Excerpt  string // tail of the failing output; multi-line
}

// Totals are the running totals of a session up to and including an entry.
type Totals struct {
	Iterations int
	Tokens     int64
	CostUSD    float64
	Elapsed    time.Duration
	// Lost counts the changes ralph could not undo (the tampered lines that
	// say so): while there are none, no iteration looks back through the
	// ledger for one a person has not answered. Written only when not 0.
	Lost int
}

// Entry is one iteration of the loop as recorded in the ledger.
type Entry struct {
	Iteration  int
	Time       time.Time
	StoryID    string
	StoryTitle string
	Outcome    string // done | retry | failed | blocked | interrupted | error
	Attempt    int

	AgentExit     int
	AgentDuration time.Duration
	Claim         string // "done", "blocked" or ""
	AgentNote     string // e.g. "timed out (idle)", "not found"

	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	CostKnown    bool

	Checks []Check
	// Baseline are the baseline checks as they were before the story's
	// first attempt (recorded in that attempt's entry).
	Baseline []Check
	Tampered []string
	// Fingerprint identifies an unsuccessful iteration's failure, for the
	// stall breaker: the same one again and again means no progress.
	Fingerprint string
	Commit      string
	Question    string
	Summary     string
	Learnings   []string
	Totals      Totals
}

const (
	sep         = " · "
	startPrefix = "=== ralph iteration "
	markerEnd   = " ==="
	contPrefix  = "  |"
)

// RunTotals returns the run's totals as of e: its Totals, counting at
// least the iterations up to e's own number, so that iteration numbers
// only grow even after a hand edit took away or damaged its totals line.
func (e Entry) RunTotals() Totals {
	t := e.Totals
	t.Iterations = max(t.Iterations, e.Iteration)
	return t
}

// Header returns the start marker of e without its "===" decorations, for
// example "iteration 3 · US-002 · retry".
func (e Entry) Header() string {
	return "iteration " + strconv.Itoa(e.Iteration) + sep + oneLine(e.StoryID) + sep + oneLine(e.Outcome)
}

func startMarker(e Entry) string {
	return "=== ralph " + e.Header() + markerEnd
}

func endMarker(iteration int) string {
	return string(appendEndMarker(nil, iteration))
}

// appendEndMarker appends endMarker(iteration) to b.
func appendEndMarker(b []byte, iteration int) []byte {
	b = append(b, "=== end of iteration "...)
	b = strconv.AppendInt(b, int64(iteration), 10)
	return append(b, markerEnd...)
}

// Format renders e as text, ending with a newline.
//
// Every value is sanitised so that no text an agent wrote can forge a marker
// or a key line: a value's further lines are written as continuation lines,
// and control characters and invalid UTF-8 are replaced.
func Format(e Entry) []byte {
	var b strings.Builder
	b.WriteString(startMarker(e))
	b.WriteByte('\n')
	if !e.Time.IsZero() {
		writeField(&b, "time", e.Time.UTC().Format(time.RFC3339))
	}
	if e.StoryID != "" || e.StoryTitle != "" {
		story := oneLine(e.StoryID)
		if e.StoryTitle != "" {
			story += " " + e.StoryTitle
		}
		writeField(&b, "story", story)
	}
	if e.Attempt != 0 {
		writeField(&b, "attempt", strconv.Itoa(e.Attempt))
	}
	if e.AgentExit != 0 || e.AgentDuration != 0 || e.Claim != "" || e.AgentNote != "" {
		agent := "exit " + strconv.Itoa(e.AgentExit) + " after " + formatDuration(e.AgentDuration)
		if e.Claim != "" {
			agent += sep + "claimed " + oneLine(e.Claim)
		}
		if e.AgentNote != "" {
			agent += sep + e.AgentNote
		}
		writeField(&b, "agent", agent)
	}
	if e.InputTokens != 0 || e.OutputTokens != 0 || e.CostKnown {
		usage := strconv.FormatInt(e.InputTokens, 10) + " input tokens" + sep +
			strconv.FormatInt(e.OutputTokens, 10) + " output tokens"
		if e.CostKnown {
			usage += sep + formatCost(e.CostUSD)
		}
		writeField(&b, "usage", usage)
	}
	for _, c := range e.Checks {
		writeField(&b, "check", formatCheck(c))
	}
	for _, c := range e.Baseline {
		writeField(&b, "baseline", formatCheck(c))
	}
	for _, t := range e.Tampered {
		if t != "" {
			writeField(&b, "tampered", t)
		}
	}
	if e.Fingerprint != "" {
		writeField(&b, "fingerprint", oneLine(e.Fingerprint))
	}
	if e.Commit != "" {
		writeField(&b, "commit", e.Commit)
	}
	if e.Question != "" {
		writeField(&b, "question", e.Question)
	}
	if e.Summary != "" {
		writeField(&b, "summary", e.Summary)
	}
	for _, l := range e.Learnings {
		if l != "" {
			writeField(&b, "learning", l)
		}
	}
	t := e.Totals
	totals := "iterations " + strconv.Itoa(t.Iterations) +
		sep + "tokens " + strconv.FormatInt(t.Tokens, 10) +
		sep + "cost " + formatCost(t.CostUSD) +
		sep + "elapsed " + formatDuration(t.Elapsed)
	if t.Lost > 0 {
		totals += sep + "lost " + strconv.Itoa(t.Lost)
	}
	writeField(&b, "totals", totals)
	b.WriteString(endMarker(e.Iteration))
	b.WriteByte('\n')
	return []byte(b.String())
}

func formatCheck(c Check) string {
	status := "fail"
	switch {
	case c.Skipped:
		status = "skip"
	case c.Passed:
		status = "pass"
	}
	s := oneLine(c.Name) + sep + status + sep + formatDuration(c.Duration)
	if c.Optional {
		s += sep + "optional"
	}
	if c.TimedOut {
		s += sep + "timed out"
	}
	if c.Known {
		s += sep + "known failure"
	}
	if c.Tests > 0 {
		s += sep + plural.Of(c.Tests, "1 test run", "%d tests run")
	}
	if c.Excerpt != "" {
		s += "\n" + c.Excerpt
	}
	return s
}

// writeField writes "key: value", putting each further line of value on a
// continuation line. Because every line of a value is prefixed, no value can
// produce a line that starts at column 0 with anything but its own key.
func writeField(b *strings.Builder, key, value string) {
	lines := strings.Split(Clean(value), "\n")
	b.WriteString(key)
	b.WriteByte(':')
	if lines[0] != "" {
		b.WriteByte(' ')
		b.WriteString(lines[0])
	}
	b.WriteByte('\n')
	for _, l := range lines[1:] {
		b.WriteString(contPrefix)
		if l != "" {
			b.WriteByte(' ')
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
}

// Clean makes s safe to write as a (possibly multi-line) value: invalid UTF-8,
// carriage returns and other control characters except tab and newline, and
// the Unicode line and paragraph separators are replaced with U+FFFD. CRLF
// line ends become plain newlines first, so Windows text keeps its lines.
func Clean(s string) string {
	if isClean(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unsafeRune(r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

func isClean(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (r != '\n' && r != '\t' && unsafeRune(r)) {
			return false
		}
	}
	return true
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// oneLine is clean for values that share a line with other parts (the
// marker's story id and outcome, a check's name): newlines become spaces.
func oneLine(s string) string {
	return strings.ReplaceAll(Clean(s), "\n", " ")
}

// formatDuration prints d like time.Duration, rounded to 0.1s below a minute
// and to 1s above, which is as precise as a person reading the log cares for.
// Below a second it keeps the unit ("0.4s", not "400ms"), so that all short
// durations in the ledger read alike.
func formatDuration(d time.Duration) string {
	if d <= -time.Minute || d >= time.Minute {
		return d.Round(time.Second).String()
	}
	d = d.Round(100 * time.Millisecond)
	if d != 0 && d > -time.Second && d < time.Second {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.String()
}

// formatCost prints a dollar amount with at least four decimals and at most
// ten: enough to keep running totals exact to far below a cent without
// printing the noise of float sums (0.30000000000000004).
func formatCost(c float64) string {
	s := strconv.FormatFloat(c, 'f', 10, 64)
	if dot := strings.IndexByte(s, '.'); dot >= 0 {
		s = strings.TrimRight(s, "0")
		if decimals := len(s) - dot - 1; decimals < 4 {
			s += strings.Repeat("0", 4-decimals)
		}
	}
	return "$" + s
}
