package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/progress"
)

func TestEntryLine(t *testing.T) {
	at := time.Date(2026, 11, 21, 11, 30, 0, 0, time.UTC)
	tests := []struct {
		name string
		e    progress.Entry
		want string
	}{
		{
			name: "done",
			e:    progress.Entry{Iteration: 2, Time: at, StoryID: "US-001", Outcome: "done", Attempt: 1, Claim: "done", Summary: "Added the table."},
			want: "  2  2026-11-21 11:30:00  US-001  done         attempt 1 · Added the table.",
		},
		{
			name: "refused claim, failing checks, optional ones left out",
			e: progress.Entry{Iteration: 13, Time: at, StoryID: "US-002", Outcome: "retry", Attempt: 2, Claim: "done",
				Checks: []progress.Check{{Name: "vet", Passed: true}, {Name: "test"}, {Name: "lint", Optional: true}, {Name: "e2e"}, {Name: "slow", Skipped: true}}},
			want: " 13  2026-11-21 11:30:00  US-002  retry        attempt 2 · claimed done · checks test, e2e failed",
		},
		{
			name: "blocked",
			e:    progress.Entry{Iteration: 1, Time: at, StoryID: "A", Outcome: "blocked", Attempt: 1, Claim: "blocked", Question: "Which DB?\nPostgres?"},
			want: "  1  2026-11-21 11:30:00  A       blocked      attempt 1 · asks: Which DB?…",
		},
		{
			name: "agent note and tampering, no time",
			e: progress.Entry{Iteration: 4, StoryID: "US-010-long", Outcome: "interrupted", Attempt: 3,
				AgentNote: "interrupted", Tampered: []string{"prd.json: restored"}},
			want: "  4  -  US-010-long  interrupted  attempt 3 · tampering undone · interrupted",
		},
		{
			name: "nothing but the marker",
			e:    progress.Entry{Iteration: 1, StoryID: "A", Outcome: "error"},
			want: "  1  -  A       error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := entryLine(tt.e); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFirstLine(t *testing.T) {
	long := strings.Repeat("é", 120)
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"one line", 100, "one line"},
		{"first\nsecond", 100, "first…"},
		{long, 100, strings.Repeat("é", 99) + "…"},
		{"word   \nmore", 100, "word…"},
		{"", 100, ""},
	}
	for _, tt := range tests {
		if got := firstLine(tt.in, tt.n); got != tt.want {
			t.Errorf("firstLine(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
