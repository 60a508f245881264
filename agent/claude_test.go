package agent

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// claudeNow is the clock of the readers under test.
var claudeNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// parse feeds stream-json to a claudeReader in chunks of the given size and
// returns what it shows and what it found.
func parse(input string, chunk int) (string, Result) {
	var shown bytes.Buffer
	r := newClaudeReader(&shown, time.Now)
	r.now = func() time.Time { return claudeNow }
	for s := input; len(s) > 0; {
		n := min(chunk, len(s))
		r.Write([]byte(s[:n]))
		s = s[n:]
	}
	var res Result
	r.finish(&res)
	return shown.String(), res
}

func TestClaudeEvents(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		shown   string
		res     Result // without Problem
		problem *Problem
	}{
		{
			name:  "text and tool use",
			input: `{"type":"assistant","message":{"content":[{"type":"text","text":"Looking."},{"type":"tool_use","name":"Grep","input":{"pattern":"func Total","path":"."}}]}}` + "\n",
			shown: "Looking.\n→ Grep: func Total\n",
		},
		{
			name:  "a block of the wrong shape is passed over, not its neighbours",
			input: `{"type":"assistant","message":{"content":[{"type":"text","text":"One."},{"type":"tool_use","name":5},7,{"type":"text","text":"Two."}]}}` + "\n",
			shown: "One.\nTwo.\n",
		},
		{
			name:  "a member of the wrong type costs only itself",
			input: `{"type":"result","subtype":["x"],"is_error":"no","num_turns":1.5,"result":"ok","total_cost_usd":"free","usage":{"input_tokens":"many","output_tokens":4}}` + "\n",
			shown: "✓ result\n",
			res:   Result{FinalMessage: "ok", OutputTokens: 4},
		},
		{
			name:  "tool input without a known field",
			input: `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"TodoWrite","input":{"todos":[{"content":"x"}]}}]}}` + "\n",
			shown: `→ TodoWrite: {"todos":[{"content":"x"}]}` + "\n",
		},
		{
			name:  "tool without input",
			input: `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"ExitPlanMode","input":{}}]}}` + "\n",
			shown: "→ ExitPlanMode\n",
		},
		{
			name:  "multi-line command on one line",
			input: `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"cd x &&\n  go test ./..."}}]}}` + "\n",
			shown: "→ Bash: cd x && go test ./...\n",
		},
		{
			name:  "result with cache tokens",
			input: `{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"ok","total_cost_usd":1.5,"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":5}}`,
			shown: "✓ result: 3 turns, $1.5000\n",
			res:   Result{FinalMessage: "ok", InputTokens: 60, OutputTokens: 5, CostUSD: 1.5, CostKnown: true},
		},
		{
			name:  "impossible usage: counts below zero are none",
			input: `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok","total_cost_usd":-3,"usage":{"input_tokens":-10,"output_tokens":-5}}` + "\n",
			shown: "✓ result: 1 turn\n",
			res:   Result{FinalMessage: "ok"},
		},
		{
			name:  "result without cost",
			input: `{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":50,"usage":{"input_tokens":1,"output_tokens":1}}` + "\n",
			shown: "✗ result (error_max_turns): 50 turns\n",
			res:   Result{InputTokens: 1, OutputTokens: 1},
		},
		{
			// An account out of credit is a problem only its person can
			// fix: the loop stops for it.
			name:    "is_error although subtype is success",
			input:   `{"type":"result","subtype":"success","is_error":true,"result":"Credit balance is too low","total_cost_usd":0}` + "\n",
			shown:   "✗ result: $0.0000 — Credit balance is too low\n",
			res:     Result{FinalMessage: "Credit balance is too low", CostKnown: true, APIError: true},
			problem: &Problem{Kind: Permanent, Message: "Credit balance is too low"},
		},
		{
			name:    "an API error's status decides its kind",
			input:   `{"type":"result","is_error":true,"api_error_status":503,"api_error_type":"api_error","result":"API Error: upstream connect error"}` + "\n",
			shown:   "✗ result — API Error: upstream connect error\n",
			res:     Result{FinalMessage: "API Error: upstream connect error", APIError: true},
			problem: &Problem{Kind: Transient, Message: "API Error: upstream connect error"},
		},
		{
			// Asked again, the same request is refused again: the loop
			// stops rather than spend every story's attempts on it.
			name:    "a request the service refuses is permanent",
			input:   `{"type":"result","is_error":true,"api_error_status":400,"api_error_type":"invalid_request_error","result":"max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for test-model"}` + "\n",
			shown:   "✗ result — max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for test-model\n",
			res:     Result{FinalMessage: "max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for test-model", APIError: true},
			problem: &Problem{Kind: Permanent, Message: "max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for test-model"},
		},
		{
			name:    "a status 400 alone is permanent too",
			input:   `{"type":"result","is_error":true,"api_error_status":400,"result":"API Error: 400 unknown parameter: reasoning"}` + "\n",
			shown:   "✗ result — API Error: 400 unknown parameter: reasoning\n",
			res:     Result{FinalMessage: "API Error: 400 unknown parameter: reasoning", APIError: true},
			problem: &Problem{Kind: Permanent, Message: "API Error: 400 unknown parameter: reasoning"},
		},
		{
			name:    "a model the service does not have is permanent",
			input:   `{"type":"result","is_error":true,"api_error_status":404,"api_error_type":"not_found_error","result":"There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it."}` + "\n",
			shown:   "✗ result — There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it.\n",
			res:     Result{FinalMessage: "There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it.", APIError: true},
			problem: &Problem{Kind: Permanent, Message: "There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it."},
		},
		{
			// ralph's API agent types every status it does not name as
			// invalid_request_error, and says so in its result: a 408 is
			// no stop, but the service's failure, as a 409 is.
			name:    "a request timeout is not permanent",
			input:   `{"type":"result","is_error":true,"api_error_status":408,"api_error_type":"invalid_request_error","result":"API error 408 (invalid_request_error): Request Timeout · gave up after 4 attempts"}` + "\n",
			shown:   "✗ result — API error 408 (invalid_request_error): Request Timeout · gave up after 4 attempts\n",
			res:     Result{FinalMessage: "API error 408 (invalid_request_error): Request Timeout · gave up after 4 attempts", APIError: true},
			problem: &Problem{Kind: Transient, Message: "API error 408 (invalid_request_error): Request Timeout · gave up after 4 attempts"},
		},
		{
			name:    "a conflict is not permanent",
			input:   `{"type":"result","is_error":true,"api_error_status":409,"api_error_type":"invalid_request_error","result":"API error 409 (invalid_request_error): Conflict · gave up after 4 attempts"}` + "\n",
			shown:   "✗ result — API error 409 (invalid_request_error): Conflict · gave up after 4 attempts\n",
			res:     Result{FinalMessage: "API error 409 (invalid_request_error): Conflict · gave up after 4 attempts", APIError: true},
			problem: &Problem{Kind: Transient, Message: "API error 409 (invalid_request_error): Conflict · gave up after 4 attempts"},
		},
		{
			// The next iteration begins with a new conversation.
			name:  "a conversation too long for the model is no problem of the service",
			input: `{"type":"result","is_error":true,"api_error_status":400,"api_error_type":"invalid_request_error","result":"prompt is too long: 215000 tokens > 200000 maximum"}` + "\n",
			shown: "✗ result — prompt is too long: 215000 tokens > 200000 maximum\n",
			res:   Result{FinalMessage: "prompt is too long: 215000 tokens > 200000 maximum", APIError: true},
		},
		{
			name:    "a rate limit's reset from its message",
			input:   `{"type":"result","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · try again in 2 minutes"}` + "\n",
			shown:   "✗ result — API Error: Request rejected (429) · try again in 2 minutes\n",
			res:     Result{FinalMessage: "API Error: Request rejected (429) · try again in 2 minutes", APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "API Error: Request rejected (429) · try again in 2 minutes", ResetAt: claudeNow.Add(2 * time.Minute)},
		},
		{
			name:    "the usage limit of a subscription",
			input:   `{"type":"result","is_error":true,"result":"Claude AI usage limit reached|1795300000"}` + "\n",
			shown:   "✗ result — Claude AI usage limit reached|1795300000\n",
			res:     Result{FinalMessage: "Claude AI usage limit reached|1795300000", APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "Claude AI usage limit reached|1795300000", ResetAt: time.Unix(1795300000, 0)},
		},
		{
			name: "a rejecting rate_limit_event gives the reset",
			input: `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1795300000}}` + "\n" +
				`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795305600,"rateLimitType":"five_hour"}}` + "\n" +
				`{"type":"result","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429)"}` + "\n",
			shown: "✗ rate limit rejected (five_hour), resets 2026-11-22T00:00:00Z\n" +
				"✗ result — API Error: Request rejected (429)\n",
			res:     Result{FinalMessage: "API Error: Request rejected (429)", APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "API Error: Request rejected (429)", ResetAt: time.Unix(1795305600, 0)},
		},
		{
			name:  "a warning in milliseconds",
			input: `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1795305600000}}` + "\n",
			shown: "● rate limit allowed_warning, resets 2026-11-22T00:00:00Z\n",
		},
		{
			name:    "a rejection and no result",
			input:   `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795305600}}` + "\n",
			shown:   "✗ rate limit rejected, resets 2026-11-22T00:00:00Z\n",
			problem: &Problem{Kind: RateLimited, Message: "rate limit rejected, resets 2026-11-22T00:00:00Z", ResetAt: time.Unix(1795305600, 0)},
		},
		{
			name:    "retrying when the stream ended",
			input:   `{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1234.5,"error_status":529,"error":"overloaded"}` + "\n",
			shown:   "✗ API error 529 overloaded: retrying (2 of 10) in 1.2s\n",
			problem: &Problem{Kind: Transient, Message: "API error 529 overloaded"},
		},
		{
			name: "a retry that worked is no problem",
			input: `{"type":"system","subtype":"api_retry","attempt":1,"error_status":429,"error":"rate_limit"}` + "\n" +
				`{"type":"assistant","message":{"content":[{"type":"text","text":"ok"}]}}` + "\n",
			shown: "✗ API error 429 rate_limit: retrying\nok\n",
		},
		{
			name: "a tool result after a retry is progress",
			input: `{"type":"system","subtype":"api_retry","error_status":500,"error":"server_error"}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}` + "\n" +
				`{"type":"result","subtype":"error_during_execution","is_error":true}` + "\n",
			shown: "✗ API error 500 server_error: retrying\n✗ result (error_during_execution)\n",
			res:   Result{APIError: true},
		},
		{
			name: "an interruption is not",
			input: `{"type":"system","subtype":"api_retry","error_status":500,"error":"server_error"}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}` + "\n" +
				`{"type":"result","subtype":"error_during_execution","is_error":true}` + "\n",
			shown:   "✗ API error 500 server_error: retrying\n✗ result (error_during_execution)\n",
			res:     Result{APIError: true},
			problem: &Problem{Kind: Transient, Message: "API error 500 server_error"},
		},
		{
			// ralph's API agent stopped (idle_timeout, say) while it
			// waited out a rate limit says so in a result of its own.
			name: "a run stopped while it waited to retry",
			input: `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":4,"retry_delay_ms":60000,"error":"rate_limit","error_status":429,"message":"429 slow down"}` + "\n" +
				`{"type":"result","subtype":"error_during_execution","is_error":false,"result":"","num_turns":1,"usage":{"input_tokens":10,"output_tokens":2}}` + "\n",
			shown:   "✗ API error 429 rate_limit: retrying (1 of 4) in 1m0s\n✗ result (error_during_execution): 1 turn\n",
			res:     Result{InputTokens: 10, OutputTokens: 2},
			problem: &Problem{Kind: RateLimited, Message: "API error 429 rate_limit"},
		},
		{
			name: "a success after a retry is none",
			input: `{"type":"system","subtype":"api_retry","attempt":1,"error_status":429,"error":"rate_limit"}` + "\n" +
				`{"type":"result","subtype":"success","is_error":false,"result":"<ralph>done</ralph>"}` + "\n",
			shown: "✗ API error 429 rate_limit: retrying\n✓ result\n",
			res:   Result{FinalMessage: "<ralph>done</ralph>"},
		},
		{
			name:    "a retry of an unnamed error",
			input:   `{"type":"system","subtype":"api_retry","error_status":null,"error":"unknown","retry_delay_ms":-5}` + "\n",
			shown:   "✗ API error unknown: retrying\n",
			problem: &Problem{Kind: Transient, Message: "API error unknown"},
		},
		{
			name:  "the CLI's own error message",
			input: `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: 500\nInternal"}]},"error":"server_error"}` + "\n",
			shown: "✗ API Error: 500 Internal\n",
		},
		{
			// Stopped before its result (a timeout, say): the tokens the
			// messages used still count. m1 comes as two events, one per
			// content block, and counts once, at its larger usage.
			name: "a stream cut before its result keeps the messages' tokens",
			input: `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Looking."}],"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":100,"output_tokens":1}}}` + "\n" +
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","name":"Bash","input":{"command":"go test"}}],"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":100,"output_tokens":30}}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}` + "\n" +
				`{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Still at it."}],"usage":{"input_tokens":5,"cache_read_input_tokens":130,"output_tokens":7}}}` + "\n" +
				`{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","name":"Read","input":{"file_path":"a.go"}}],"usage":{"input_tokens":5,"cache_read_input_tokens":130,"output_tokens":7}}}` + "\n" +
				`{"type":"assistant","message":{"content":[],"usage":{"input_tokens":-4,"output_tokens":2}}}` + "\n",
			shown: "Looking.\n→ Bash: go test\nStill at it.\n→ Read: a.go\n",
			res:   Result{InputTokens: 265, OutputTokens: 39},
		},
		{
			// The result's usage and cost are the run's: what the
			// messages said is not added to them.
			name: "a result's usage replaces the messages'",
			input: `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Done.\n<ralph>done</ralph>"}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}}}` + "\n" +
				`{"type":"assistant","message":{"id":"m1","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}}}` + "\n" +
				`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Done.\n<ralph>done</ralph>","total_cost_usd":0.25,"usage":{"input_tokens":12,"cache_read_input_tokens":100,"output_tokens":40}}` + "\n",
			shown: "Done.\n<ralph>done</ralph>\n✓ result: 1 turn, $0.2500\n",
			res:   Result{FinalMessage: "Done.\n<ralph>done</ralph>", InputTokens: 112, OutputTokens: 40, CostUSD: 0.25, CostKnown: true},
		},
		{
			// The first result ends the run: a later one is not the
			// run's (something it left running printed it, say).
			name: "the first result stands",
			input: `{"type":"result","is_error":true,"result":"first","total_cost_usd":1}` + "\n" +
				`{"type":"result","result":"second"}` + "\n",
			shown: "✗ result: $1.0000 — first\n[ralph: passed over a result event after the run's end]\n",
			res:   Result{FinalMessage: "first", CostUSD: 1, CostKnown: true, APIError: true},
		},
		{
			name: "a later result claims nothing",
			input: `{"type":"assistant","message":{"content":[{"type":"text","text":"Not yet."}]}}` + "\n" +
				`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Not yet.","usage":{"input_tokens":3,"output_tokens":4}}` + "\n" +
				`{"type":"assistant","message":{"content":[{"type":"text","text":"<ralph>done</ralph>"}]}}` + "\n" +
				`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"<ralph>done</ralph>","total_cost_usd":0.5,"usage":{"input_tokens":30,"output_tokens":40}}` + "\n",
			shown: "Not yet.\n✓ result: 1 turn\n<ralph>done</ralph>\n[ralph: passed over a result event after the run's end]\n",
			res:   Result{FinalMessage: "Not yet.", InputTokens: 3, OutputTokens: 4},
		},
		{
			// The result's problem is the run's as it stood then: an
			// api_retry or a rate_limit_event after it changes nothing
			// (a failed run is not made rate-limited, which is no
			// attempt, nor is its limit given a reset).
			name: "events after a failed result do not make its problem",
			input: `{"type":"result","subtype":"error_during_execution","is_error":false,"result":""}` + "\n" +
				`{"type":"system","subtype":"api_retry","error_status":429,"error":"rate_limit"}` + "\n",
			shown: "✗ result (error_during_execution)\n✗ API error 429 rate_limit: retrying\n",
		},
		{
			name: "events after a rate-limited result do not change its reset",
			input: `{"type":"result","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429)"}` + "\n" +
				`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795305600}}` + "\n",
			shown:   "✗ result — API Error: Request rejected (429)\n✗ rate limit rejected, resets 2026-11-22T00:00:00Z\n",
			res:     Result{FinalMessage: "API Error: Request rejected (429)", APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "API Error: Request rejected (429)"},
		},
		{
			name:  "a field of the wrong type costs only itself",
			input: `{"type":"result","is_error":"yes","num_turns":"many","result":"kept","usage":{"input_tokens":"x","output_tokens":7},"total_cost_usd":"free"}` + "\n",
			shown: "✓ result\n",
			res:   Result{FinalMessage: "kept", OutputTokens: 7},
		},
		{
			name:  "not JSON is shown as it is",
			input: "Warning: something\r\n[1, 2]\n\n{\"type\":\"stream_event\"}\n",
			shown: "Warning: something\n[1, 2]\n",
		},
		{
			name:  "string content and successful tool results are quiet",
			input: `{"type":"user","message":{"content":"just text"}}` + "\n" + `{"type":"user","message":{"content":[{"type":"tool_result","content":"fine"}]}}` + "\n",
			shown: "",
		},
		{
			name:  "failed tool result",
			input: `{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":"\nExit code 1\nFAIL"}]}}` + "\n",
			shown: "  ✗ Exit code 1\n",
		},
		{
			name:  "system events",
			input: `{"type":"system","subtype":"init"}` + "\n" + `{"type":"system","subtype":"compact_boundary"}` + "\n",
			shown: "● session started\n● compact_boundary\n",
		},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1 << 20, 7, 1} {
			shown, res := parse(tt.input, chunk)
			if shown != tt.shown {
				t.Errorf("%s (chunks of %d): shown %q, want %q", tt.name, chunk, shown, tt.shown)
			}
			problem := res.Problem
			res.Problem = nil
			if res != tt.res {
				t.Errorf("%s (chunks of %d): result %+v, want %+v", tt.name, chunk, res, tt.res)
			}
			if !sameProblem(problem, tt.problem) {
				t.Errorf("%s (chunks of %d): problem %s, want %s", tt.name, chunk, showProblem(problem), showProblem(tt.problem))
			}
		}
	}
}

func sameProblem(a, b *Problem) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.Message == b.Message && a.ResetAt.Equal(b.ResetAt)
}

func showProblem(p *Problem) string {
	if p == nil {
		return "none"
	}
	s := p.Kind.String() + ": " + strconv.Quote(p.Message)
	if !p.ResetAt.IsZero() {
		s += " until " + p.ResetAt.UTC().Format(time.RFC3339)
	}
	return s
}

// The transcripts in testdata/claude were captured from Claude Code 2.1.330
// (claude -p --output-format stream-json --verbose
// --dangerously-skip-permissions) run against internal/fakemodel, with
// CLAUDE_CODE_MAX_RETRIES=1 or 2 for the errors it gives up on.
func TestClaudeTranscripts(t *testing.T) {
	done := "Wrote both files.\n\n<ralph>done</ralph>"
	tests := []struct {
		name    string
		res     Result // without Problem
		problem *Problem
	}{
		{
			// Text, a Bash call, a Bash call that fails, a Write call,
			// the final text.
			name: "tools",
			res:  Result{FinalMessage: done, InputTokens: 400, OutputTokens: 80, CostUSD: 0.0032, CostKnown: true},
		},
		{
			// One 429, retried by the CLI itself.
			name: "retry-then-success",
			res:  Result{FinalMessage: done, InputTokens: 400, OutputTokens: 80, CostUSD: 0.0032, CostKnown: true},
		},
		{
			name: "rate-limit",
			res: Result{
				FinalMessage: "API Error: Request rejected (429) · This request would exceed your organization's rate limit. Please try again later.",
				CostKnown:    true, APIError: true,
			},
			problem: &Problem{Kind: RateLimited, Message: "API Error: Request rejected (429) · This request would exceed your organization's rate limit. Please try again later."},
		},
		{
			name: "server-error",
			res: Result{
				FinalMessage: "API Error: 500 Internal Server Error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:34219).",
				CostKnown:    true, APIError: true,
			},
			problem: &Problem{Kind: Transient, Message: "API Error: 500 Internal Server Error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:34219)."},
		},
		{
			name: "overloaded",
			res: Result{
				FinalMessage: "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:33405).",
				CostKnown:    true, APIError: true,
			},
			problem: &Problem{Kind: Transient, Message: "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:33405)."},
		},
		{
			name:    "auth-error",
			res:     Result{FinalMessage: "Failed to authenticate. API Error: 401 Unauthorized", CostKnown: true, APIError: true},
			problem: &Problem{Kind: Permanent, Message: "Failed to authenticate. API Error: 401 Unauthorized"},
		},
		{
			name:    "connection-refused",
			res:     Result{FinalMessage: "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)", CostKnown: true, APIError: true},
			problem: &Problem{Kind: Transient, Message: "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"},
		},
		{
			// SIGINT while the CLI retried 429s: it still ends with a
			// result, an error without text that claims nothing; the
			// rate limit it was waiting out is the problem.
			name:    "interrupted",
			res:     Result{CostKnown: true, APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "API error 429 rate_limit"},
		},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join("testdata", "claude", tt.name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1 << 20, 100, 1} {
			shown, res := parse(string(b), chunk)
			problem := res.Problem
			res.Problem = nil
			if res != tt.res {
				t.Errorf("%s (chunks of %d): result %+v\nwant %+v", tt.name, chunk, res, tt.res)
			}
			if !sameProblem(problem, tt.problem) {
				t.Errorf("%s (chunks of %d): problem %s, want %s", tt.name, chunk, showProblem(problem), showProblem(tt.problem))
			}
			if strings.Contains(shown, `"type"`) {
				t.Errorf("%s: the view shows raw JSON:\n%s", tt.name, shown)
			}
			golden(t, filepath.Join("testdata", "claude", tt.name+".golden"), shown)
		}
	}
}

// TestClaudeStoppedTokens cuts a captured transcript before its result, as
// a run stopped at agent.timeout is: the tokens of its messages count, each
// message once although Claude Code sends it as one event per content
// block. Their output is only what each message's first event said (1
// token here, the result says 80): less than was spent, never more.
func TestClaudeStoppedTokens(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "claude", "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The result is the last line.
	in := strings.TrimSuffix(string(b), "\n")
	cut := strings.LastIndexByte(in, '\n') + 1
	if !strings.Contains(in[cut:], `"type":"result"`) {
		t.Fatal("the last line of tools.jsonl is not its result")
	}
	for _, chunk := range []int{1 << 20, 100, 1} {
		_, res := parse(in[:cut], chunk)
		if res.InputTokens != 400 || res.OutputTokens != 4 || res.CostUSD != 0 || res.CostKnown || res.FinalMessage != "" {
			t.Errorf("chunks of %d: result %+v; want 400 input and 4 output tokens, no cost, no final message", chunk, res)
		}
	}
}

// TestClaudeMessagesBounded feeds more messages than the reader remembers
// ids of: each still counts once, and the ids held stay bounded.
func TestClaudeMessagesBounded(t *testing.T) {
	var in strings.Builder
	n := 3 * claudeMaxMessages
	for i := range n {
		ev := `{"type":"assistant","message":{"id":"m` + strconv.Itoa(i) + `","content":[],"usage":{"input_tokens":2,"output_tokens":1}}}` + "\n"
		in.WriteString(ev + ev)
	}
	r := newClaudeReader(io.Discard, time.Now)
	r.Write([]byte(in.String()))
	var res Result
	r.finish(&res)
	if res.InputTokens != int64(2*n) || res.OutputTokens != int64(n) {
		t.Errorf("tokens %d in, %d out; want %d in, %d out", res.InputTokens, res.OutputTokens, 2*n, n)
	}
	if len(r.messages) > claudeMaxMessages {
		t.Errorf("%d message ids held, want at most %d", len(r.messages), claudeMaxMessages)
	}
}

func TestClaudeFinalMessageBounded(t *testing.T) {
	text := strings.Repeat("é", MaxFinalMessage) + "<ralph>done</ralph>" // 128 KiB of 2-byte runes
	_, res := parse(`{"type":"result","result":"`+text+`"}`+"\n", 32<<10)
	if len(res.FinalMessage) > MaxFinalMessage {
		t.Errorf("len(FinalMessage) = %d, want at most %d", len(res.FinalMessage), MaxFinalMessage)
	}
	if !strings.HasSuffix(res.FinalMessage, "<ralph>done</ralph>") || !utf8.ValidString(res.FinalMessage) {
		t.Errorf("FinalMessage is not the valid tail of the result")
	}
}

func TestToolSummaryCut(t *testing.T) {
	long := strings.Repeat("€", 300)
	got := toolSummary([]byte(`{"command":"` + long + `"}`))
	if len(got) > maxSummary || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("toolSummary of a long command = %q (%d bytes), want a valid cut of at most %d bytes ending in …", got, len(got), maxSummary)
	}
}

func TestEnviron(t *testing.T) {
	tests := []struct {
		name  string
		base  []string
		extra []string
		want  []string
	}{
		{
			name: "nested variables removed",
			base: []string{"HOME=/h", "CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDE_CODE_SSE_PORT=1234", "CODEX_THREAD_ID=t", "GEMINI_CLI=1", "PATH=/bin"},
			want: []string{"HOME=/h", "PATH=/bin"},
		},
		{
			name:  "extra overrides",
			base:  []string{"A=1", "B=2"},
			extra: []string{"B=3", "C=4"},
			want:  []string{"A=1", "B=3", "C=4"},
		},
		{
			name:  "last extra wins",
			base:  []string{"A=1"},
			extra: []string{"A=2", "A=3"},
			want:  []string{"A=3"},
		},
		{
			name:  "a nested variable set on purpose",
			base:  []string{"CLAUDECODE=1"},
			extra: []string{"CLAUDECODE=0"},
			want:  []string{"CLAUDECODE=0"},
		},
		{
			name: "sandbox markers kept",
			base: []string{"CODEX_SANDBOX=seatbelt", "CODEX_SANDBOX_NETWORK_DISABLED=1"},
			want: []string{"CODEX_SANDBOX=seatbelt", "CODEX_SANDBOX_NETWORK_DISABLED=1"},
		},
		{
			name: "prefix is not a match",
			base: []string{"CLAUDECODE_X=1", "XCLAUDECODE=1"},
			want: []string{"CLAUDECODE_X=1", "XCLAUDECODE=1"},
		},
	}
	for _, tt := range tests {
		base := slices.Clone(tt.base)
		got := Environ(base, tt.extra...)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Environ = %q, want %q", tt.name, got, tt.want)
		}
		if !slices.Equal(base, tt.base) {
			t.Errorf("%s: Environ changed base to %q", tt.name, base)
		}
	}
}

func FuzzClaudeLine(f *testing.F) {
	f.Add([]byte(`{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"done","total_cost_usd":0.1,"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3}}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":[{"type":"text","text":"no"}]}]}}`))
	f.Add([]byte(`{"type":"system","subtype":"init","model":"m"}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":"plain"}}`))
	f.Add([]byte(`{"type":"result","usage":null,"total_cost_usd":null,"num_turns":1e400}`))
	f.Add([]byte("not json\n{\"type\":"))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":1e300,"error_status":429,"error":"rate_limit"}`))
	f.Add([]byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":-1e20,"rateLimitType":"five_hour"}}`))
	f.Add([]byte(`{"type":"result","is_error":true,"api_error_status":429,"api_error_type":"rate_limit_error","result":"try again in 99999999999h"}`))
	f.Add([]byte(`{"type":"assistant","error":"rate_limit","message":{"content":[{"type":"text","text":"API Error"}]}}`))
	for _, name := range []string{"tools", "rate-limit"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "claude", name+".jsonl")); err == nil {
			for _, line := range bytes.Split(b, []byte("\n")) {
				f.Add(line)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r := newClaudeReader(io.Discard, time.Now)
		r.Write(line)
		r.Write([]byte("\n"))
		r.Write(line) // and once without a newline
		var res Result
		r.finish(&res)
		if len(res.FinalMessage) > MaxFinalMessage {
			t.Errorf("len(FinalMessage) = %d, over %d", len(res.FinalMessage), MaxFinalMessage)
		}
		if p := res.Problem; p != nil && (p.Kind < RateLimited || p.Kind > Permanent || len(p.Message) > maxSummary || strings.Contains(p.Message, "\n")) {
			t.Errorf("Problem %+v: want a known kind and a message on one line of at most %d bytes", *p, maxSummary)
		}
		if s := toolSummary(line); len(s) > maxSummary {
			t.Errorf("toolSummary is %d bytes, over %d", len(s), maxSummary)
		}
	})
}

// TestClaudeFullTurn: Claude Code's result holds the last text block of the
// model's last turn alone; the final message is the whole turn when it ends
// as the result does, so a learning in an earlier block and a claim before
// a blank last block are kept. Text before a tool call is no part of it.
func TestClaudeFullTurn(t *testing.T) {
	assistant := func(blocks ...string) string {
		return `{"type":"assistant","message":{"content":[` + strings.Join(blocks, ",") + `]}}` + "\n"
	}
	text := func(s string) string { return `{"type":"text","text":` + strconv.Quote(s) + `}` }
	tool := `{"type":"tool_use","name":"Bash","input":{"command":"true"}}`
	result := func(s string) string {
		return `{"type":"result","subtype":"success","is_error":false,"result":` + strconv.Quote(s) + `}` + "\n"
	}
	for _, c := range []struct {
		name, input, want string
	}{
		{"a learning in a block before the claim's",
			assistant(text("Looking."), tool) + assistant(text("Wrote hello.txt.\nLearning: keep me")) + assistant(text("<ralph>done</ralph>")) + result("<ralph>done</ralph>"),
			"Wrote hello.txt.\nLearning: keep me\n<ralph>done</ralph>"},
		{"a blank last block",
			assistant(text("Wrote hello.txt.\n<ralph>done</ralph>\n"), text(" ")) + result(" "),
			"Wrote hello.txt.\n<ralph>done</ralph>\n "},
		{"one block: the result",
			assistant(text("All done.\n<ralph>done</ralph>")) + result("All done.\n<ralph>done</ralph>"),
			"All done.\n<ralph>done</ralph>"},
		{"a result that is not how the turn ends stands",
			assistant(text("Half way.")) + result("Something else."),
			"Something else."},
	} {
		_, res := parse(c.input, 4096)
		if res.FinalMessage != c.want {
			t.Errorf("%s: final message %q, want %q", c.name, res.FinalMessage, c.want)
		}
	}
}
