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
		// A time that has passed is the next one; one that passed just
		// now (asked again as the limit lifted) is none, not a day's wait.
		{"5-hour limit reached ∙ resets 8am", RateLimited, time.Date(2026, 3, 5, 8, 0, 0, 0, time.Local)},
		{"5-hour limit reached ∙ resets 9:30am", RateLimited, time.Time{}},
		{"Weekly limit reached ∙ resets Wed 9:30am", RateLimited, time.Time{}},
		{"Weekly limit reached ∙ resets Wed 8am", RateLimited, time.Date(2026, 3, 11, 8, 0, 0, 0, time.Local)},
		{"Weekly limit reached ∙ resets Mar 4, 9:30am", RateLimited, time.Time{}},
		{"Weekly limit reached ∙ resets Mar 4, 8am", RateLimited, time.Date(2027, 3, 4, 8, 0, 0, 0, time.Local)},
		{"You've hit your usage limit. Try again in 2 hours 5 minutes.", RateLimited, now.Add(2*time.Hour + 5*time.Minute)},
		{"Rate limited; retry after 30 seconds", RateLimited, now.Add(30 * time.Second)},
		{"usage limit reached, resets at 8:30 am", RateLimited, time.Date(2026, 3, 5, 8, 30, 0, 0, time.Local)},
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
		// A request refused as invalid, as codex quotes the body and
		// opencode the status: asked again, it is refused again.
		{`{"error":{"message":"Unsupported parameter: 'reasoning.effort' is not supported with this model.","type":"invalid_request_error","param":"reasoning.effort","code":"unsupported_parameter"}}`, Permanent, time.Time{}},
		{"Bad Request: {\"error\":{\"message\":\"max_tokens is too large\"}} (HTTP 400)", Permanent, time.Time{}},
		// A limit on the tokens of a minute is a rate limit, not a
		// conversation too long.
		{"429 Too Many Requests: too many tokens per minute, retry in 20s", RateLimited, now.Add(20 * time.Second)},
		// A stream the server dropped, as gemini's fetch (undici) says it.
		{"API error: terminated", Transient, time.Time{}},
		{"TypeError: terminated\n  [cause]: SocketError: other side closed (UND_ERR_SOCKET)", Transient, time.Time{}},
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
		{"Opus weekly limit reached ∙ resets Mon 9am", RateLimited, time.Date(2026, 3, 9, 9, 0, 0, 0, time.Local)},
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
		// A wait in any of the units and spellings the CLIs use.
		{"5-hour limit reached ∙ resets in 1h30m", RateLimited, now.Add(90 * time.Minute)},
		{"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2m30s. Visit https://platform.openai.com/account/rate-limits to learn more.", RateLimited, now.Add(150 * time.Second)},
		{"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000. Please try again in 1.5s.", RateLimited, now.Add(1500 * time.Millisecond)},
		{"Rate limit reached for gpt-4o on requests per min (RPM): Limit 500. Please try again in 500ms.", RateLimited, now.Add(500 * time.Millisecond)},
		{"Rate limit reached for 10KTPM-200RPM on tokens per min. Limit: 10000 / min. Please try again in 20ms. Contact us through our help center", RateLimited, now.Add(20 * time.Millisecond)},
		{"You've hit your usage limit. To get more access now, send a request to your admin or try again in 3 days 6 hours 57 minutes.", RateLimited, now.Add(78*time.Hour + 57*time.Minute)},
		{"You've hit your usage limit. Try again in 2 days 3 hours 5 minutes.", RateLimited, now.Add(51*time.Hour + 5*time.Minute)},
		{"You've hit your session limit · resets in 1d 5h", RateLimited, now.Add(29 * time.Hour)},
		{"TerminalQuotaError: You have exhausted your capacity on this model. Your quota will reset after 21h53m56s.", RateLimited, now.Add(21*time.Hour + 53*time.Minute + 56*time.Second)},
		{`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34.5s"}]}}`, RateLimited, now.Add(34500 * time.Millisecond)},
		{"429 Too Many Requests; retry-after: 12", RateLimited, now.Add(12 * time.Second)},
		// The other forms of the headers, as an error may quote them:
		// retry-after-ms (OpenAI's and Anthropic's APIs send it besides,
		// and it wins), and retry-after as an HTTP date (RFC 9110).
		{"429 Too Many Requests; retry-after-ms: 1500", RateLimited, now.Add(1500 * time.Millisecond)},
		{`429 Too Many Requests {"headers":{"retry-after":"3","retry-after-ms":"2500"}}`, RateLimited, now.Add(2500 * time.Millisecond)},
		{"APIError: 429 Too Many Requests; headers: {'retry-after': '7'}", RateLimited, now.Add(7 * time.Second)},
		{"HTTP/1.1 429 Too Many Requests\r\nRetry-After: Wed, 04 Mar 2026 11:30:00 GMT\r\n", RateLimited, time.Date(2026, 3, 4, 11, 30, 0, 0, time.UTC)},
		{`rate limited {"Retry-After":"Thu, 05 Mar 2026 00:00:00 GMT"}`, RateLimited, time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"429 Too Many Requests; retry-after-ms: 99999999999", RateLimited, now.Add(MaxWait)},
		// A wait longer than any limit is cut to MaxWait.
		{"usage limit reached; resets in 400 days", RateLimited, now.Add(MaxWait)},
		{"usage limit reached; try again in 99999999999999999999 hours", RateLimited, now.Add(MaxWait)},
		// So is a time a machine wrote that far ahead: the API agent's
		// reset for a retry-after of 999999999 seconds or an HTTP date in
		// the year 9999, and such a time quoted or in Claude Code's form.
		{"API error 429 (rate_limit_error): slow down · the limit resets at 2057-11-10T11:46:39Z", RateLimited, now.Add(MaxWait)},
		{"API error 529 (overloaded_error): Overloaded · gave up after 1 attempts; the server asked to wait until 2318-06-19T09:21:31Z", Transient, now.Add(MaxWait)},
		{"429 Too Many Requests; Retry-After: Fri, 31 Dec 9999 23:59:59 GMT", RateLimited, now.Add(MaxWait)},
		{"429 Too Many Requests; retry-after: 999999999", RateLimited, now.Add(MaxWait)},
		{"Claude AI usage limit reached|99999999999", RateLimited, now.Add(MaxWait)},
		// Claude Code's weekly limits, on a date or a weekday; a date
		// without a year is the next one not past.
		{"Weekly limit reached ∙ resets Nov 25, 5pm", RateLimited, time.Date(2026, 11, 25, 17, 0, 0, 0, time.Local)},
		{"You've hit your weekly limit · resets Sep 15 at 7pm", RateLimited, time.Date(2026, 9, 15, 19, 0, 0, 0, time.Local)},
		{"You've hit your weekly limit · resets Jul 31, 2am (UTC)", RateLimited, time.Date(2026, 7, 31, 2, 0, 0, 0, time.UTC)},
		{"Weekly limit reached · resets Jan 12, 10:59am", RateLimited, time.Date(2027, 1, 12, 10, 59, 0, 0, time.Local)},
		{"You've hit your weekly limit · resets Mar 2 at 9am", RateLimited, time.Date(2027, 3, 2, 9, 0, 0, 0, time.Local)},
		{"You've hit your weekly limit · resets Mon 12:00am", RateLimited, time.Date(2026, 3, 9, 0, 0, 0, 0, time.Local)},
		{"You've hit your weekly limit · resets Tuesday 5pm", RateLimited, time.Date(2026, 3, 10, 17, 0, 0, 0, time.Local)},
		{"You've hit your weekly limit · resets Wed 9am", RateLimited, time.Date(2026, 3, 11, 9, 0, 0, 0, time.Local)},
		{"You've hit your Opus limit · resets 3:45pm", RateLimited, time.Date(2026, 3, 4, 15, 45, 0, 0, time.Local)},
		{"You've hit your usage limit. Upgrade your plan or add credits to continue, or try again at Aug 10, 2026, 11:12 AM.", RateLimited, time.Date(2026, 8, 10, 11, 12, 0, 0, time.Local)},
		// Numbers that are no reset: a count, a version, a line, a log
		// line's time, a duration that is not a wait, a date that is none.
		{"429 rate limited; the build had finished in 2.5s", RateLimited, time.Time{}},
		{"API Error: 429 after 3 attempts in 20ms", RateLimited, time.Time{}},
		{"rate limit reached (retry 3 of 5, client 2.1.4)", RateLimited, time.Time{}},
		{"rate limit reached; retry at line 30 of main.go", RateLimited, time.Time{}},
		{"Mar 04 09:59:58 host agent[42]: 429 Too Many Requests", RateLimited, time.Time{}},
		{"2026-03-04 09:59:58 ERROR 429 rate limit exceeded", RateLimited, time.Time{}},
		{"usage limit reached; wait 5 months", RateLimited, time.Time{}},
		{"rate limited, try again in 5", RateLimited, time.Time{}},
		{"You've hit your weekly limit · resets Monday", RateLimited, time.Time{}},
		{"You've hit your weekly limit · resets Feb 30, 5pm", RateLimited, time.Time{}},
		{"rate limit reached; try again on Mar 4 2 times", RateLimited, time.Time{}},
		{"usage limit reached, resets at 13pm", RateLimited, time.Time{}},
		{"429 Too Many Requests; retry-after: 0", RateLimited, time.Time{}},
		{"429 Too Many Requests; retry-after: soon", RateLimited, time.Time{}},
		{"429 Too Many Requests; Retry-After: Wed, 04 Mar 2026 11:30:00 CET", RateLimited, time.Time{}},
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
		// A request refused as too long: the conversation outgrew the
		// model's context, and the next iteration begins a new one.
		`{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
		"API error 400 INVALID_ARGUMENT: The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
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

// TestResetZone: a reset time in the zone Claude Code names is that
// zone's, whatever ralph's own.
func TestResetZone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC) // 19:00 in Tokyo
	for text, want := range map[string]time.Time{
		"Session limit reached · resets 8:30pm (Asia/Tokyo)":            time.Date(2026, 3, 4, 20, 30, 0, 0, tokyo),
		"Weekly limit reached · resets 6pm (Asia/Tokyo)":                time.Date(2026, 3, 5, 18, 0, 0, 0, tokyo),
		"You've hit your weekly limit · resets Mar 6, 4pm (Asia/Tokyo)": time.Date(2026, 3, 6, 16, 0, 0, 0, tokyo),
		"You've hit your weekly limit · resets Thu 9am (Asia/Tokyo)":    time.Date(2026, 3, 5, 9, 0, 0, 0, tokyo),
	} {
		if p := Classify(text, now); p == nil || !p.ResetAt.Equal(want) {
			t.Errorf("Classify(%q) = %+v, want a reset at %v", text, p, want)
		}
	}
	// A zone this system does not know is local time.
	local := Classify("You've hit your session limit · resets 8:30pm", now)
	if p := Classify("You've hit your session limit · resets 8:30pm (Nowhere/Atlantis)", now); p == nil || local == nil || !p.ResetAt.Equal(local.ResetAt) {
		t.Errorf("with an unknown zone: %+v, want %+v", p, local)
	}
}

func TestClassifyMessageIsTheLine(t *testing.T) {
	p := Classify("starting\nAPI Error: 429 slow down\nbye", time.Now())
	if p == nil || p.Message != "API Error: 429 slow down" {
		t.Errorf("got %+v", p)
	}
}
