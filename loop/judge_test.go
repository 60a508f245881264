package loop

import (
	"slices"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/progress"
)

func TestParseClaim(t *testing.T) {
	tests := []struct {
		name  string
		final string
		want  Claim
	}{
		{"done last line", "I did it.\n<ralph>done</ralph>\n", Claim{Done: true}},
		{"done with spaces", "ok\n   <ralph> done </ralph>  \n\n", Claim{Done: true}},
		{"blocked", "Hmm.\n<ralph>blocked: which DB?</ralph>", Claim{Blocked: true, Question: "which DB?"}},
		{"blocked without question", "<ralph>blocked:</ralph>", Claim{}},
		{"question with terminal escapes", "<ralph>blocked: \x1b]0;pwned\x07which \x1b[31mDB\x1b[0m?\u009b2J</ralph>", Claim{Blocked: true, Question: "which DB?2J"}},
		{"question of escapes only", "<ralph>blocked: \x1b\x07</ralph>", Claim{}},
		{"tag after a redraw", "thinking...\r\x1b[K<ralph>done</ralph>\n", Claim{Done: true}},
		{"tag redrawn over", "<ralph>done</ralph>\rnot done yet", Claim{}},
		{"tag in prose", "I will print <ralph>done</ralph> when finished.\nStill working.", Claim{}},
		{"tag mid line at end", "I am <ralph>done</ralph>", Claim{}},
		{"tag not last", "<ralph>done</ralph>\nmore text", Claim{}},
		{"unknown word", "<ralph>finished</ralph>", Claim{}},
		{"nested", "<ralph><ralph>done</ralph>", Claim{}},
		{"empty", "", Claim{}},
		{"only whitespace", " \n\t\n", Claim{}},
		{"crlf", "done it\r\n<ralph>done</ralph>\r\n", Claim{Done: true}},
		{"done in colour", "\x1b[32m<ralph>done</ralph>\x1b[0m\n", Claim{Done: true}},
		{"done, colours reset on a line of their own", "<ralph>done</ralph>\n\x1b[0m\n", Claim{Done: true}},
		{"done in 24-bit colour, colons", "\x1b[38:2::0:200:0m<ralph>done</ralph>\x1b[m", Claim{Done: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseClaim(tt.final); got != tt.want {
				t.Errorf("ParseClaim(%q) = %+v, want %+v", tt.final, got, tt.want)
			}
		})
	}
}

func TestParseReport(t *testing.T) {
	final := "Added the table.\nLearning: run sqlc\n  Learning:   migrations in db/  \n\nIt works.\n<ralph>done</ralph>\n"
	r := ParseReport(final)
	if want := "Added the table.\n\nIt works."; r.Summary != want {
		t.Errorf("summary = %q, want %q", r.Summary, want)
	}
	if want := []string{"run sqlc", "migrations in db/"}; strings.Join(r.Learnings, "|") != strings.Join(want, "|") {
		t.Errorf("learnings = %q, want %q", r.Learnings, want)
	}
	long := ParseReport(strings.Repeat("é", 5000))
	if len(long.Summary) > maxSummary || !strings.HasSuffix(long.Summary, "[cut]") {
		t.Errorf("long summary: %d bytes, ends %q", len(long.Summary), long.Summary[len(long.Summary)-10:])
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name string
		e    Evidence
		want string
	}{
		{"done", Evidence{Claim: Claim{Done: true}, Attempt: 1, MaxAttempts: 3}, Done},
		{"claim refused by checks", Evidence{Claim: Claim{Done: true}, FailedRequired: []string{"test"}, Attempt: 1, MaxAttempts: 3}, Retry},
		{"no claim", Evidence{Attempt: 1, MaxAttempts: 3}, Retry},
		{"no claim, checks pass, last attempt", Evidence{Attempt: 3, MaxAttempts: 3}, Failed},
		{"tampered", Evidence{Claim: Claim{Done: true}, Tampered: true, Attempt: 1, MaxAttempts: 3}, Retry},
		{"stopped", Evidence{Claim: Claim{Done: true}, Stopped: "timed out", Attempt: 1, MaxAttempts: 3}, Retry},
		{"blocked", Evidence{Claim: Claim{Blocked: true, Question: "q"}, Attempt: 3, MaxAttempts: 3}, Blocked},
		{"refused on last attempt", Evidence{Claim: Claim{Done: true}, FailedRequired: []string{"a", "b"}, Attempt: 5, MaxAttempts: 5}, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Judge(tt.e); got.Outcome != tt.want {
				t.Errorf("Judge(%+v) = %+v, want outcome %s", tt.e, got, tt.want)
			}
		})
	}
}

// TestKnownFailures: the verdict names the required checks that failed as
// in the baseline, not the optional ones, which never count.
func TestKnownFailures(t *testing.T) {
	cs := []progress.Check{
		{Name: "unit", Known: true},
		{Name: "lint", Known: true, Optional: true},
		{Name: "vet"},
		{Name: "e2e", Passed: true},
	}
	if got, want := knownFailures(cs), []string{"unit"}; !slices.Equal(got, want) {
		t.Errorf("knownFailures = %q, want %q", got, want)
	}
}
