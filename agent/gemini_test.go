package agent

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// geminiNow is the clock of the reader under test.
var geminiNow = time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)

// parseGemini feeds stream-json to a geminiReader in chunks of the given
// size, as from an agent that exited with exitCode, and returns what it
// shows and what it found.
func parseGemini(input string, chunk, exitCode int) (string, Result) {
	var shown bytes.Buffer
	r := newGeminiReader(&shown, time.Now)
	r.now = func() time.Time { return geminiNow }
	for s := input; len(s) > 0; {
		n := min(chunk, len(s))
		r.Write([]byte(s[:n]))
		s = s[n:]
	}
	res := Result{ExitCode: exitCode}
	r.finish(&res)
	return shown.String(), res
}

func geminiSameProblem(a, b *Problem) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.Message == b.Message && a.ResetAt.Equal(b.ResetAt)
}

func geminiShowProblem(p *Problem) string {
	if p == nil {
		return "none"
	}
	s := p.Kind.String() + ": " + strconv.Quote(p.Message)
	if !p.ResetAt.IsZero() {
		s += " until " + p.ResetAt.UTC().Format(time.RFC3339)
	}
	return s
}

// The transcripts in testdata/gemini were captured from Gemini CLI 0.61.0
// (gemini --yolo --skip-trust -o stream-json PROMPT, the prompt as the
// positional query; the preset now passes --prompt=PROMPT, and the end to
// end tests read its output with the same reader) run against
// internal/fakemodel by e2e's TestGeminiCapture, with general.maxAttempts 1
// and a model of its own for the errors it would otherwise retry; <case>.exit
// holds the exit status and <case>.golden the view.
func TestGeminiTranscripts(t *testing.T) {
	tests := []struct {
		name    string
		res     Result // without ExitCode and Problem
		problem *Problem
	}{
		{
			// A run_shell_command call, a write_file call, then the final
			// text, with the reply tag cut between two pieces.
			name: "tools",
			res: Result{
				FinalMessage: "Wrote hello.txt and bye.txt.\nLearning: both tools work\n<ralph>done</ralph>",
				InputTokens:  400, OutputTokens: 80,
			},
		},
		{
			// A read_file call that fails, and gemini goes on.
			name: "tool-error",
			res: Result{
				FinalMessage: "The file is missing, so there is nothing to do yet.",
				InputTokens:  300, OutputTokens: 60,
			},
		},
		{
			// A 429 for a daily quota: gemini does not retry it, and says
			// neither "429" nor "rate limit"; the exit status does.
			name:    "daily-quota",
			res:     Result{InputTokens: 100, OutputTokens: 20, APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "API error: You have exhausted your daily quota on this model."},
		},
		{
			// A 429 with a RetryInfo of 37s, retried until gemini gave up.
			name:    "retry-429",
			res:     Result{APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "API error: Resource has been exhausted (e.g. check quota).", ResetAt: geminiNow.Add(37 * time.Second)},
		},
		{
			name:    "server-error",
			res:     Result{APIError: true},
			problem: &Problem{Kind: Transient, Message: "API error 500 INTERNAL: An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"},
		},
		{
			// Gemini answers a key that is not valid with a 400.
			name:    "bad-key",
			res:     Result{APIError: true},
			problem: &Problem{Kind: Permanent, Message: "API error 400 INVALID_ARGUMENT: API key not valid. Please pass a valid API key."},
		},
	}
	for _, tt := range tests {
		input, err := os.ReadFile(filepath.Join("testdata", "gemini", tt.name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		exit, err := os.ReadFile(filepath.Join("testdata", "gemini", tt.name+".exit"))
		if err != nil {
			t.Fatal(err)
		}
		code, err := strconv.Atoi(strings.TrimSpace(string(exit)))
		if err != nil {
			t.Fatal(err)
		}
		if tt.problem != nil {
			tt.problem.Message = oneLine(tt.problem.Message)
		}
		var first string
		for _, chunk := range []int{1, 7, 4096} {
			shown, res := parseGemini(string(input), chunk, code)
			problem := res.Problem
			res.Problem = nil
			want := tt.res
			want.ExitCode = code
			if res != want {
				t.Errorf("%s (chunks of %d):\ngot  %+v\nwant %+v", tt.name, chunk, res, want)
			}
			if !geminiSameProblem(problem, tt.problem) {
				t.Errorf("%s (chunks of %d): problem %s, want %s", tt.name, chunk, geminiShowProblem(problem), geminiShowProblem(tt.problem))
			}
			if first == "" {
				first = shown
			} else if shown != first {
				t.Errorf("%s: the view in chunks of %d differs:\n%s\nfrom:\n%s", tt.name, chunk, shown, first)
			}
		}
		golden(t, filepath.Join("testdata", "gemini", tt.name+".golden"), first)
	}
}

// TestGeminiStopped: a run cut off before its result (stopped, or
// crashed) has no final message, however done its text sounds.
func TestGeminiStopped(t *testing.T) {
	input, err := os.ReadFile(filepath.Join("testdata", "gemini", "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(input), "\n"), "\n")
	cut := strings.Join(lines[:len(lines)-1], "")
	if !strings.Contains(cut, "<ralph>done</ralp") {
		t.Fatalf("the cut transcript lacks the final text:\n%s", cut)
	}
	shown, res := parseGemini(cut, 4096, 130)
	if res != (Result{ExitCode: 130}) {
		t.Errorf("got %+v, want nothing learnt", res)
	}
	if !strings.HasSuffix(shown, "<ralph>done</ralph>\n") {
		t.Errorf("the view does not end the text's line:\n%s", shown)
	}
}

func TestGeminiEvents(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		exit    int
		shown   string
		res     Result // without ExitCode and Problem
		problem *Problem
	}{
		{
			name: "only the text after the last tool event is final",
			input: `{"type":"message","role":"assistant","content":"Let me look.","delta":true}` + "\n" +
				`{"type":"tool_use","tool_name":"glob","tool_id":"g1","parameters":{"pattern":"**/*.go"}}` + "\n" +
				`{"type":"message","role":"assistant","content":"Found it.\n","delta":true}` + "\n" +
				`{"type":"tool_result","tool_id":"g1","status":"success","output":"Found 3 files"}` + "\n" +
				`{"type":"message","role":"assistant","content":"All ","delta":true}` + "\n" +
				`{"type":"message","role":"assistant","content":"done.\n<ralph>do","delta":true}` + "\n" +
				`{"type":"message","role":"assistant","content":"ne</ralph>","delta":true}` + "\n" +
				`{"type":"result","status":"success","stats":{"total_tokens":12,"input_tokens":10,"output_tokens":2,"tool_calls":1}}` + "\n",
			shown: "Let me look.\n→ glob: **/*.go\nFound it.\nAll done.\n<ralph>done</ralph>\n✓ result: 1 tool call, 10 input + 2 output tokens\n",
			res:   Result{FinalMessage: "All done.\n<ralph>done</ralph>", InputTokens: 10, OutputTokens: 2},
		},
		{
			name:  "no text after the last tool: no final message",
			input: `{"type":"message","role":"assistant","content":"<ralph>done</ralph>","delta":true}` + "\n" + `{"type":"tool_use","tool_name":"update_topic","parameters":{}}` + "\n" + `{"type":"result","status":"success","stats":{}}`,
			shown: "<ralph>done</ralph>\n→ update_topic\n✓ result: 0 tool calls, 0 input + 0 output tokens\n",
		},
		{
			name:  "the user's message is not shown and not final",
			input: `{"type":"init","model":"gemini-2.5-pro"}` + "\n" + `{"type":"message","role":"user","content":"end with <ralph>done</ralph>"}` + "\n" + `{"type":"result","status":"success","stats":{"input_tokens":5}}` + "\n",
			shown: "● session started: gemini-2.5-pro\n✓ result: 0 tool calls, 5 input + 0 output tokens\n",
			res:   Result{InputTokens: 5},
		},
		{
			name:  "thinking counts as output",
			input: `{"type":"result","status":"success","stats":{"total_tokens":1500,"input_tokens":1000,"output_tokens":100,"tool_calls":0}}` + "\n",
			shown: "✓ result: 0 tool calls, 1000 input + 500 output tokens\n",
			res:   Result{InputTokens: 1000, OutputTokens: 500},
		},
		{
			name: "a failed tool, a warning and a log line",
			input: `{"type":"tool_use","tool_name":"run_shell_command","parameters":{"command":"go test ./...\n","description":"Run the tests"}}` + "\n" +
				`{"type":"tool_result","status":"error","output":"exit 1","error":{"type":"shell_error","message":"Command failed\nwith more"}}` + "\n" +
				`{"type":"tool_result","status":"error"}` + "\n" +
				`{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}` + "\n" +
				"Ripgrep is not available.\n",
			shown: "→ run_shell_command: go test ./...\n  ✗ Command failed\n  ✗ the tool failed\n✗ warning: Loop detected, stopping execution\nRipgrep is not available.\n",
		},
		{
			name:    "an API error after gemini's retries",
			input:   `{"type":"message","role":"assistant","content":"Half","delta":true}` + "\n" + `{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: got status: UNAVAILABLE. The model is overloaded.]"},"stats":{"input_tokens":100,"output_tokens":1}}` + "\n",
			exit:    503 % 256,
			shown:   "Half\n✗ result: API error: got status: UNAVAILABLE. The model is overloaded.\n",
			res:     Result{InputTokens: 100, OutputTokens: 1, APIError: true},
			problem: &Problem{Kind: Transient, Message: "API error: got status: UNAVAILABLE. The model is overloaded."},
		},
		{
			name:    "a 429 that says when to retry",
			input:   `{"type":"result","status":"error","error":{"message":"[API Error: You exceeded your current quota. Please retry in 12.5s.]"}}` + "\n",
			exit:    429 % 256,
			shown:   "✗ result: API error: You exceeded your current quota. Please retry in 12.5s.\n",
			res:     Result{APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "API error: You exceeded your current quota. Please retry in 12.5s.", ResetAt: geminiNow.Add(12500 * time.Millisecond)},
		},
		{
			name:    "an error result that tells nothing but its message",
			input:   `{"type":"result","status":"error","error":{"type":"FatalToolExecutionError","message":"Error executing tool write_file: disk full"}}` + "\n",
			exit:    54,
			shown:   "✗ result: Error executing tool write_file: disk full\n",
			res:     Result{APIError: true},
			problem: nil,
		},
		{
			name:    "an error result without an error: the last error event",
			input:   `{"type":"error","severity":"error","message":"Model stream ended with an invalid chunk or missing finish reason."}` + "\n" + `{"type":"result","status":"error","stats":{}}` + "\n",
			shown:   "✗ Model stream ended with an invalid chunk or missing finish reason.\n✗ result: Model stream ended with an invalid chunk or missing finish reason.\n",
			res:     Result{APIError: true},
			problem: nil,
		},
		{
			name:    "the status of a quoted API error decides",
			input:   `{"type":"result","status":"error","error":{"message":"[API Error: got status: 429. {\"error\":{\"code\":429,\"message\":\"Slow down, the server said 500 times.\",\"status\":\"RESOURCE_EXHAUSTED\"}}]"}}` + "\n",
			exit:    1,
			shown:   "✗ result: API error 429 RESOURCE_EXHAUSTED: Slow down, the server said 500 times.\n",
			res:     Result{APIError: true},
			problem: &Problem{Kind: RateLimited, Message: "API error 429 RESOURCE_EXHAUSTED: Slow down, the server said 500 times."},
		},
		{
			name:    "an exit status alone",
			input:   `{"type":"result","status":"error","error":{}}` + "\n",
			exit:    500 % 256,
			shown:   "✗ result: error\n",
			res:     Result{APIError: true},
			problem: &Problem{Kind: Transient, Message: "gemini exited 244"},
		},
		{
			// The result ends the run: text after it is not the run's
			// (something it left running printed it, say).
			name: "text after the result is not final",
			input: `{"type":"message","role":"assistant","content":"Not yet.","delta":true}` + "\n" +
				`{"type":"result","status":"success","stats":{"input_tokens":10,"output_tokens":2}}` + "\n" +
				`{"type":"message","role":"assistant","content":"\n<ralph>done</ralph>","delta":true}` + "\n",
			shown: "Not yet.\n✓ result: 0 tool calls, 10 input + 2 output tokens\n\n<ralph>done</ralph>\n",
			res:   Result{FinalMessage: "Not yet.", InputTokens: 10, OutputTokens: 2},
		},
		{
			name: "a second result is passed over",
			input: `{"type":"message","role":"assistant","content":"<ralph>done</ralph>","delta":true}` + "\n" +
				`{"type":"result","status":"success","stats":{"input_tokens":10,"output_tokens":2}}` + "\n" +
				`{"type":"message","role":"assistant","content":"more","delta":true}` + "\n" +
				`{"type":"result","status":"error","error":{"message":"[API Error: 429 Too Many Requests]"},"stats":{"input_tokens":99}}` + "\n",
			shown: "<ralph>done</ralph>\n✓ result: 0 tool calls, 10 input + 2 output tokens\nmore\n[ralph: passed over a result event after the run's end]\n",
			res:   Result{FinalMessage: "<ralph>done</ralph>", InputTokens: 10, OutputTokens: 2},
		},
		{
			name:  "fields of unexpected types",
			input: `{"type":"tool_use","tool_name":7,"parameters":[1,2]}` + "\n" + `{"type":"message","role":"assistant","content":{"x":1}}` + "\n" + `{"type":"result","status":"success","stats":{"input_tokens":"many","output_tokens":3}}` + "\n" + `[1]` + "\n",
			shown: "→ tool: [1,2]\n✓ result: 0 tool calls, 0 input + 3 output tokens\n[1]\n",
			res:   Result{OutputTokens: 3},
		},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 5, 1 << 20} {
			shown, res := parseGemini(tt.input, chunk, tt.exit)
			problem := res.Problem
			res.Problem = nil
			want := tt.res
			want.ExitCode = tt.exit
			if shown != tt.shown {
				t.Errorf("%s (chunks of %d): shown\n%q\nwant\n%q", tt.name, chunk, shown, tt.shown)
			}
			if res != want {
				t.Errorf("%s (chunks of %d):\ngot  %+v\nwant %+v", tt.name, chunk, res, want)
			}
			if !geminiSameProblem(problem, tt.problem) {
				t.Errorf("%s (chunks of %d): problem %s, want %s", tt.name, chunk, geminiShowProblem(problem), geminiShowProblem(tt.problem))
			}
		}
	}
}

// TestGeminiFinalMessageBounded: the model's text is kept to its last
// MaxFinalMessage bytes, starting on a rune boundary, however much of it
// streams; and a line too long to hold is passed over.
func TestGeminiFinalMessageBounded(t *testing.T) {
	var in strings.Builder
	piece := strings.Repeat("é", 1000) // 2000 bytes
	for range 100 {
		in.WriteString(`{"type":"message","role":"assistant","content":"` + piece + `","delta":true}` + "\n")
	}
	in.WriteString(`{"type":"message","role":"assistant","content":"` + strings.Repeat("x", maxLine) + `","delta":true}` + "\n")
	in.WriteString(`{"type":"message","role":"assistant","content":"\n<ralph>done</ralph>","delta":true}` + "\n")
	in.WriteString(`{"type":"result","status":"success","stats":{}}` + "\n")
	shown, res := parseGemini(in.String(), 64<<10, 0)
	if len(res.FinalMessage) > MaxFinalMessage || len(res.FinalMessage) < MaxFinalMessage-utf8.UTFMax {
		t.Errorf("len(FinalMessage) = %d, want about %d", len(res.FinalMessage), MaxFinalMessage)
	}
	if !utf8.ValidString(res.FinalMessage) || !strings.HasSuffix(res.FinalMessage, "é\n<ralph>done</ralph>") {
		t.Errorf("FinalMessage ends %q", lastBytes(res.FinalMessage, 40))
	}
	if !strings.Contains(shown, "[ralph: passed over an output line of ") {
		t.Errorf("the view does not say a line was passed over")
	}
}

func TestGeminiReaderRegistered(t *testing.T) {
	newReader, ok := readers[GeminiStreamJSON]
	if !ok {
		t.Fatal("no reader for GeminiStreamJSON")
	}
	if _, ok := newReader(io.Discard, time.Now).(*geminiReader); !ok {
		t.Errorf("the reader for GeminiStreamJSON is not a geminiReader")
	}
	p, ok := LookupPreset("gemini")
	if !ok || p.Format != GeminiStreamJSON || !p.PromptArg {
		t.Errorf("preset gemini = %+v, want stream-json with the prompt as an argument", p)
	}
}

func FuzzGemini(f *testing.F) {
	for _, name := range []string{"tools", "tool-error", "daily-quota", "retry-429", "server-error", "bad-key"} {
		b, err := os.ReadFile(filepath.Join("testdata", "gemini", name+".jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 0)
	}
	f.Add([]byte(`{"type":"result","status":"error","error":null,"stats":{"total_tokens":-1,"input_tokens":9223372036854775807}}`), 173)
	f.Add([]byte(`{"type":"tool_use","parameters":null}`+"\n"+`{"type":"message","role":"assistant","content":"\xff\xfe"}`), 0)
	f.Add([]byte(`{"type":"error","severity":7,"message":["x"]}`+"\n"+`{"type":`), 244)
	f.Fuzz(func(t *testing.T, input []byte, exit int) {
		r := newGeminiReader(io.Discard, time.Now)
		r.Write(input)
		r.Write([]byte("\n"))
		r.Write(input) // and once without a newline
		res := Result{ExitCode: exit}
		r.finish(&res)
		if len(res.FinalMessage) > MaxFinalMessage {
			t.Errorf("len(FinalMessage) = %d, over %d", len(res.FinalMessage), MaxFinalMessage)
		}
		if res.Problem != nil && len(res.Problem.Message) > maxSummary {
			t.Errorf("problem message is %d bytes, over %d", len(res.Problem.Message), maxSummary)
		}
	})
}

// TestGeminiFatal: gemini's fatal errors before any request are permanent
// by their exit status, whatever their words; other statuses are no
// problem of their own.
func TestGeminiFatal(t *testing.T) {
	for code, want := range map[int]bool{41: true, 42: true, 52: true, 1: false, 130: false} {
		p := geminiFatal(code, "Some error ralph has no words for.\nmore")
		if (p != nil) != want {
			t.Errorf("geminiFatal(%d) = %+v, want a problem: %v", code, p, want)
			continue
		}
		if p != nil && (p.Kind != Permanent || p.Message != "Some error ralph has no words for. (gemini: "+map[int]string{41: "authentication failed", 42: "bad input", 52: "bad configuration"}[code]+")") {
			t.Errorf("geminiFatal(%d) = %+v", code, p)
		}
	}
	if p := geminiFatal(41, ""); p == nil || p.Message != "gemini exited 41 (gemini: authentication failed)" {
		t.Errorf("geminiFatal with no stderr = %+v", p)
	}
}

// TestGeminiOutgrown: a 400 that says the conversation outgrew the model's
// context ends its iteration only: the next begins a new one. Another 400
// (a key not valid) is permanent.
func TestGeminiOutgrown(t *testing.T) {
	outgrown := `[API Error: {"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`
	if p := geminiProblem(outgrown, 144, time.Now()); p != nil {
		t.Errorf("geminiProblem(outgrown) = %+v, want none", p)
	}
	badKey := `[API Error: {"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]`
	if p := geminiProblem(badKey, 144, time.Now()); p == nil || p.Kind != Permanent {
		t.Errorf("geminiProblem(bad key) = %+v, want permanent", p)
	}
}

// TestGeminiResetOnStderr: a rate limit whose result says not when it lifts
// takes the time gemini said on its stderr, after its last try.
func TestGeminiResetOnStderr(t *testing.T) {
	events, err := os.ReadFile(filepath.Join("testdata", "gemini", "daily-quota.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	script := "cat <<'END'\n" + string(events) + "END\necho 'Attempt 3 failed: You have exhausted your daily quota. Please retry in 3600s.' >&2\nexit 173"
	res, err := Run(context.Background(), Options{
		Argv:   []string{"sh", "-c", script},
		Dir:    t.TempDir(),
		Format: GeminiStreamJSON,
		Output: io.Discard,
		Now:    func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Problem; p == nil || p.Kind != RateLimited || !p.ResetAt.Equal(now.Add(time.Hour)) {
		t.Errorf("Problem = %+v, want a rate limit that lifts at %v", p, now.Add(time.Hour))
	}
}
