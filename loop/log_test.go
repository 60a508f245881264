package loop

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/progress"
)

func TestReportEntry(t *testing.T) {
	tests := []struct {
		name string
		e    progress.Entry
		want string
	}{
		{
			// The counters, checks and totals are always there; the rest
			// only when set.
			name: "minimal",
			e:    progress.Entry{Iteration: 1, StoryID: "A", Outcome: "error"},
			want: `{"iteration":1,"story":"A","outcome":"error","agentExit":0,"agentSeconds":0,"inputTokens":0,"outputTokens":0,"checks":[],"totals":{"iterations":0,"tokens":0,"costUSD":0,"elapsedSeconds":0}}`,
		},
		{
			name: "full",
			e: progress.Entry{
				Iteration: 3, Time: time.Date(2026, 11, 21, 11, 30, 0, 0, time.FixedZone("CET", 3600)),
				StoryID: "US-002", StoryTitle: "Add cart", Outcome: "retry", Attempt: 2,
				AgentExit: 1, AgentDuration: 12300 * time.Millisecond, Claim: "done", AgentNote: "timed out",
				InputTokens: 1234, OutputTokens: 567, CostUSD: 0, CostKnown: true,
				Checks: []progress.Check{
					{Name: "test", Duration: 2100 * time.Millisecond, TimedOut: true, Excerpt: "--- FAIL"},
					{Name: "lint", Passed: true, Optional: true},
					{Name: "e2e", Skipped: true},
				},
				Tampered: []string{"t"}, Commit: "3f2a9c1", Question: "q?", Summary: "s", Learnings: []string{"l"},
				Totals: progress.Totals{Iterations: 3, Tokens: 5400, CostUSD: 0.0456, Elapsed: 90 * time.Second},
			},
			want: `{"iteration":3,"time":"2026-11-21T10:30:00Z","story":"US-002","title":"Add cart","outcome":"retry","attempt":2,` +
				`"agentExit":1,"agentSeconds":12.3,"claim":"done","agentNote":"timed out","inputTokens":1234,"outputTokens":567,"costUSD":0,` +
				`"checks":[{"name":"test","passed":false,"timedOut":true,"seconds":2.1,"excerpt":"--- FAIL"},` +
				`{"name":"lint","passed":true,"optional":true,"seconds":0},{"name":"e2e","passed":false,"skipped":true,"seconds":0}],` +
				`"tampered":["t"],"commit":"3f2a9c1","question":"q?","summary":"s","learnings":["l"],` +
				`"totals":{"iterations":3,"tokens":5400,"costUSD":0.0456,"elapsedSeconds":90}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(ReportEntry(tt.e))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
