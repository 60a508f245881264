package agent

import (
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.Local)
	tests := []struct {
		text  string
		kind  ProblemKind
		reset time.Time
	}{
		{"API Error: 429 {\"type\":\"rate_limit_error\"}", RateLimited, time.Time{}},
		{"Claude AI usage limit reached|1751234400", RateLimited, time.Unix(1751234400, 0)},
		{"5-hour limit reached ∙ resets 3pm", RateLimited, time.Date(2026, 3, 4, 15, 0, 0, 0, time.Local)},
		{"You've hit your usage limit. Try again in 2 hours 5 minutes.", RateLimited, now.Add(2*time.Hour + 5*time.Minute)},
		{"Rate limited; retry after 30 seconds", RateLimited, now.Add(30 * time.Second)},
		{"usage limit reached, resets at 9:30 am", RateLimited, time.Date(2026, 3, 5, 9, 30, 0, 0, time.Local)},
		{"quota exceeded until 2026-03-04T12:00:00Z", RateLimited, time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)},
		// A number after "retry" or "again" is a time only with "at", a
		// minute or am/pm.
		{"Error: 429 Too Many Requests (retry 2 of 5 failed)", RateLimited, time.Time{}},
		{"rate limited, try again 1 minute later", RateLimited, now.Add(time.Minute)},
		{"429: retry 2 of 5 failed; resets at 11:30", RateLimited, time.Date(2026, 3, 4, 11, 30, 0, 0, time.Local)},
		// Codex, when the reset is on another day.
		{"You have hit your usage limit. Upgrade to Pro or try again at Mar 6th, 2026 3:05 AM.", RateLimited, time.Date(2026, 3, 6, 3, 5, 0, 0, time.Local)},
		{"You've hit your usage limit. Try again at Dec 1st, 2026 12:40 PM.", RateLimited, time.Date(2026, 12, 1, 12, 40, 0, 0, time.Local)},
		{"RESOURCE_EXHAUSTED: Too Many Requests", RateLimited, time.Time{}},
		{"You have exhausted your daily quota on this model.", RateLimited, time.Time{}},
		{"API key not valid. Please pass a valid API key.", Permanent, time.Time{}},
		{"API Error: 529 Overloaded", Transient, time.Time{}},
		{"API error 503 (server_error): maintenance; the server asked to wait until 2026-03-04T11:00:00Z", Transient, time.Date(2026, 3, 4, 11, 0, 0, 0, time.UTC)},
		{"Error: 500 Internal Server Error", Transient, time.Time{}},
		{"TypeError: fetch failed (ECONNREFUSED)", Transient, time.Time{}},
		{"stream disconnected before completion", Transient, time.Time{}},
		{"Invalid API key · Please run /login", Permanent, time.Time{}},
		{"API Error: 401 authentication_error", Permanent, time.Time{}},
		{"model: claude-nope not found", Permanent, time.Time{}},
		{"error: unknown option '--bogus'", Permanent, time.Time{}},
		{"--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons", Permanent, time.Time{}},
		// Money that ran out does not come back in an hour.
		{"429 You exceeded your current quota, please check your plan and billing details.", Permanent, time.Time{}},
		{`{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}`, Permanent, time.Time{}},
		{"Quota exceeded. Check your plan and billing details.", Permanent, time.Time{}},
		{"Your credit balance is too low to access the Anthropic API.", Permanent, time.Time{}},
		{"When using Gemini API, you must specify the GEMINI_API_KEY environment variable.", Permanent, time.Time{}},
		{"Opus weekly limit reached ∙ resets Mon 9am", RateLimited, time.Time{}},
		{"Claude Pro plan limit reached", RateLimited, time.Time{}},
		{"HTTP/1.1 429", RateLimited, time.Time{}},
		{"request failed (429)", RateLimited, time.Time{}},
		{`{"error":{"code":429,"message":"slow down"}}`, RateLimited, time.Time{}},
		{`{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`, Transient, time.Time{}},
		// Gemini's per-minute and per-day limits share OpenAI's words for
		// a quota run out, and say they are rate limits.
		{"[API Error: You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. RESOURCE_EXHAUSTED]", RateLimited, time.Time{}},
		{"Opus limit reached ∙ resets 5pm", RateLimited, time.Date(2026, 3, 4, 17, 0, 0, 0, time.Local)},
		{"Claude Max limit reached", RateLimited, time.Time{}},
	}
	for _, tt := range tests {
		p := Classify(tt.text, now)
		if p == nil {
			t.Errorf("Classify(%q) = nil, want %v", tt.text, tt.kind)
			continue
		}
		if p.Kind != tt.kind || !p.ResetAt.Equal(tt.reset) {
			t.Errorf("Classify(%q) = %v reset %v, want %v reset %v", tt.text, p.Kind, p.ResetAt, tt.kind, tt.reset)
		}
	}
	for _, text := range []string{"", "tests failed: 3 of 12", "exit status 1", "permission denied: ./build.sh",
		// A crash's stack, a full context: failures of the run, judged as such.
		"    at file:///usr/lib/node_modules/@openai/codex/dist/index.js:429:17",
		"TypeError: x is undefined\n    at main.js:500:3\n    at run (lib/a.js:401:9)",
		"Context limit reached · /compact or /clear to continue",
		`Traceback (most recent call last):\n  File "app.py", line 429, in handler\nKeyError: 'x'`,
	} {
		if p := Classify(text, now); p != nil {
			t.Errorf("Classify(%q) = %+v, want nil", text, p)
		}
	}
}

func TestClassifyMessageIsTheLine(t *testing.T) {
	p := Classify("starting\nAPI Error: 429 slow down\nbye", time.Now())
	if p == nil || p.Message != "API Error: 429 slow down" {
		t.Errorf("got %+v", p)
	}
}
