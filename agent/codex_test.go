package agent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The transcripts in testdata/codex were captured from codex-cli 0.169.0
// (`codex exec --json`) running against internal/fakemodel's Responses API.

// parseCodex feeds `codex exec --json` output to a codexReader in chunks of
// the given size and returns what it shows and what it found.
func parseCodex(input string, chunk int, now time.Time) (string, Result) {
	var shown bytes.Buffer
	r := newCodexReader(&shown, time.Now)
	r.now = func() time.Time { return now }
	for s := input; len(s) > 0; {
		n := min(chunk, len(s))
		r.Write([]byte(s[:n]))
		s = s[n:]
	}
	var res Result
	r.finish(&res)
	return shown.String(), res
}

func codexTranscript(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "codex", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCodexTranscripts(t *testing.T) {
	now := time.Date(2026, 11, 21, 11, 35, 0, 0, time.Local)
	tests := []struct {
		file  string
		res   Result
		shown []string // lines the view must hold
	}{
		{
			file: "tools.jsonl",
			res: Result{
				FinalMessage: "I wrote hello.txt and bye.txt.\n<ralph>done</ralph>",
				InputTokens:  400,
				OutputTokens: 80,
			},
			shown: []string{
				"● session started\n",
				"→ shell: echo hello > hello.txt && cat hello.txt\n",
				"→ edit: add /tmp/codexprobe/w1/bye.txt\n",
				"→ shell: ls nosuchfile\n  ✗ exit 2: ls: cannot access 'nosuchfile': No such file or directory\n",
				"I wrote hello.txt and bye.txt.\n<ralph>done</ralph>\n",
				"✓ turn completed: 400 input tokens, 80 output tokens\n",
			},
		},
		{
			file: "blocked.jsonl",
			res: Result{
				FinalMessage: "Nothing to do here.\n\n<ralph>blocked: which file should I edit?</ralph>",
				InputTokens:  100,
				OutputTokens: 20,
			},
			shown: []string{"✗ Model metadata for `gpt-fake` not found."},
		},
		{
			file: "rate-limit.jsonl",
			res: Result{APIError: true, Problem: &Problem{
				Kind:    RateLimited,
				Message: "exceeded retry limit, last status: 429 Too Many Requests",
			}},
			shown: []string{
				"✗ Reconnecting... 5/5 (exceeded retry limit, last status: 429 Too Many Requests)\n",
				"✗ turn failed: exceeded retry limit, last status: 429 Too Many Requests\n",
			},
		},
		{
			file: "usage-limit.jsonl",
			res: Result{APIError: true, Problem: &Problem{
				Kind:    RateLimited,
				Message: "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 12:35 PM.",
				ResetAt: time.Date(2026, 11, 21, 12, 35, 0, 0, time.Local),
			}},
		},
		{
			file: "server-error.jsonl",
			res: Result{APIError: true, Problem: &Problem{
				Kind:    Transient,
				Message: "We’re currently experiencing high demand, which may cause temporary errors.",
			}},
		},
		{
			file: "auth-error.jsonl",
			res: Result{APIError: true, Problem: &Problem{
				Kind:    Permanent,
				Message: oneLine("unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys., url: http://127.0.0.1:38899/v1/responses"),
			}},
		},
		{
			file: "missing-key.jsonl",
			res: Result{APIError: true, Problem: &Problem{
				Kind:    Permanent,
				Message: "Missing environment variable: `FAKE_OPENAI_KEY`.",
			}},
		},
		{
			// Stopped while a command ran: no turn end, so no final
			// message and no tokens.
			file:  "stopped.jsonl",
			shown: []string{"→ shell: echo working; sleep 30\n"},
		},
	}
	for _, tt := range tests {
		input := codexTranscript(t, tt.file)
		for _, chunk := range []int{1 << 20, 13, 1} {
			shown, res := parseCodex(input, chunk, now)
			if !codexSameResult(res, tt.res) {
				t.Errorf("%s (chunks of %d): result %s, want %s", tt.file, chunk, codexDescribe(res), codexDescribe(tt.res))
			}
			for _, line := range tt.shown {
				if !strings.Contains(shown, line) {
					t.Errorf("%s (chunks of %d): view lacks %q; it is:\n%s", tt.file, chunk, line, shown)
				}
			}
			if strings.Contains(shown, `"type"`) {
				t.Errorf("%s: the view shows raw JSON:\n%s", tt.file, shown)
			}
		}
	}
}

func codexSameResult(a, b Result) bool {
	pa, pb := a.Problem, b.Problem
	a.Problem, b.Problem = nil, nil
	if a != b || (pa == nil) != (pb == nil) {
		return false
	}
	return pa == nil || (pa.Kind == pb.Kind && pa.Message == pb.Message && pa.ResetAt.Equal(pb.ResetAt))
}

func codexDescribe(r Result) string {
	p := r.Problem
	r.Problem = nil
	s := fmt.Sprintf("%+v", r)
	if p != nil {
		s += fmt.Sprintf(" with problem %+v", *p)
	}
	return s
}

// TestCodexRun runs a captured transcript through Run, as the preset does,
// and pins the view in a golden file.
func TestCodexRun(t *testing.T) {
	o := script("")
	o.Argv = []string{"cat", filepath.Join("testdata", "codex", "tools.jsonl")}
	o.Format = CodexJSON
	res := run(t, o)
	if res.FinalMessage != "I wrote hello.txt and bye.txt.\n<ralph>done</ralph>" || res.InputTokens != 400 || res.OutputTokens != 80 || res.CostKnown || res.Problem != nil {
		t.Errorf("Run = %+v; want the final message and the turn's tokens", res)
	}
	golden(t, filepath.Join("testdata", "codex", "render.golden"), o.Output.(*syncBuffer).String())
}

func TestCodexEvents(t *testing.T) {
	now := time.Date(2026, 11, 21, 11, 35, 0, 0, time.UTC)
	tests := []struct {
		name  string
		input string
		shown string
		res   Result
	}{
		{
			// The first turn's end is the run's (codex exec runs one
			// turn): what follows is shown and is not the run's, as the
			// linger keeps the result of a run that went on after it.
			name: "a later turn without an end changes nothing",
			input: `{"type":"turn.started"}` + "\n" +
				`{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"first <ralph>done</ralph>"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":2}}` + "\n" +
				`{"type":"turn.started"}` + "\n" +
				`{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"second"}}` + "\n",
			shown: "first <ralph>done</ralph>\n✓ turn completed: 1 input tokens, 2 output tokens\nsecond\n",
			res:   Result{FinalMessage: "first <ralph>done</ralph>", InputTokens: 1, OutputTokens: 2},
		},
		{
			name: "a later turn that fails keeps the run's end",
			input: `{"type":"turn.started"}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":200,"output_tokens":40}}` + "\n" +
				`{"type":"turn.started"}` + "\n" +
				`{"type":"turn.failed","error":{"message":"something odd"}}` + "\n",
			shown: "✓ turn completed: 300 input tokens, 40 output tokens\n[ralph: passed over a turn.failed event after the run's end]\n",
			res:   Result{InputTokens: 300, OutputTokens: 40},
		},
		{
			// Something the agent left running, say, printed a turn of
			// its own: its claim is not the run's.
			name: "a later turn that completes claims nothing",
			input: `{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"not yet"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":2}}` + "\n" +
				`{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"<ralph>done</ralph>"}}` + "\n" +
				`{"type":"turn.started"}` + "\n" +
				`{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"<ralph>done</ralph>"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":20}}` + "\n",
			shown: "not yet\n✓ turn completed: 1 input tokens, 2 output tokens\n<ralph>done</ralph>\n<ralph>done</ralph>\n[ralph: passed over a turn.completed event after the run's end]\n",
			res:   Result{FinalMessage: "not yet", InputTokens: 1, OutputTokens: 2},
		},
		{
			name: "a turn that fails after the run's end does not fail it",
			input: `{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"<ralph>done</ralph>"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":2}}` + "\n" +
				`{"type":"turn.failed","error":{"message":"429 Too Many Requests"}}` + "\n",
			shown: "<ralph>done</ralph>\n✓ turn completed: 1 input tokens, 2 output tokens\n[ralph: passed over a turn.failed event after the run's end]\n",
			res:   Result{FinalMessage: "<ralph>done</ralph>", InputTokens: 1, OutputTokens: 2},
		},
		{
			name: "the last agent message of the turn is final",
			input: `{"type":"item.completed","item":{"type":"agent_message","text":"looking"}}` + "\n" +
				`{"type":"item.completed","item":{"type":"agent_message","text":"done now"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":3,"output_tokens":7,"reasoning_output_tokens":4}}`,
			shown: "looking\ndone now\n✓ turn completed: 5 input tokens, 7 output tokens\n",
			res:   Result{FinalMessage: "done now", InputTokens: 5, OutputTokens: 7},
		},
		{
			name:  "a completed turn without a message",
			input: `{"type":"turn.completed"}` + "\n",
			shown: "✓ turn completed\n",
		},
		{
			name: "a field of the wrong type costs only itself",
			input: `{"type":"item.completed","item":{"type":"agent_message","text":"kept","id":7}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":"many","output_tokens":9}}` + "\n",
			shown: "kept\n✓ turn completed: 0 input tokens, 9 output tokens\n",
			res:   Result{FinalMessage: "kept", OutputTokens: 9},
		},
		{
			name: "a call shown at its start is not shown again",
			input: `{"type":"item.started","item":{"id":"a","type":"command_execution","command":"bash -lc 'it'\\''s'","status":"in_progress"}}` + "\n" +
				`{"type":"item.completed","item":{"id":"a","type":"command_execution","command":"bash -lc 'it'\\''s'","exit_code":0,"status":"completed"}}` + "\n",
			shown: "→ shell: it's\n",
		},
		{
			name: "tool calls of other kinds",
			input: `{"type":"item.completed","item":{"id":"m","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"query":"x"},"error":{"message":"no such index"},"status":"failed"}}` + "\n" +
				`{"type":"item.started","item":{"id":"w","type":"web_search","query":"go fuzzing"}}` + "\n" +
				`{"type":"item.started","item":{"id":"p","type":"todo_list","items":[{"text":"read","completed":false},{"text":"fix","completed":false}]}}` + "\n" +
				`{"type":"item.updated","item":{"id":"p","type":"todo_list","items":[{"text":"read","completed":true}]}}` + "\n" +
				`{"type":"item.completed","item":{"id":"f","type":"file_change","changes":[],"status":"failed"}}` + "\n" +
				`{"type":"item.completed","item":{"id":"r","type":"reasoning","text":"hmm"}}` + "\n",
			shown: "→ docs.search: x\n  ✗ no such index\n→ web_search: go fuzzing\n→ plan: read; fix\n→ edit\n  ✗ file_change failed\n",
		},
		{
			name:  "a command that is not a quoted shell word is shown as it is",
			input: `{"type":"item.started","item":{"id":"c","type":"command_execution","command":"/bin/bash -lc echo 'a"}}` + "\n",
			shown: "→ shell: echo 'a\n",
		},
		{
			name: "an unknown failure is an API error without a problem",
			input: `{"type":"item.completed","item":{"type":"agent_message","text":"<ralph>done</ralph>"}}` + "\n" +
				`{"type":"turn.failed","error":{"message":"something odd\nsecond line"}}` + "\n",
			shown: "<ralph>done</ralph>\n✗ turn failed: something odd\n",
			res:   Result{APIError: true},
		},
		{
			name:  "not JSON is shown as it is",
			input: "Reading additional input from stdin...\r\n[1]\nnull\n\n",
			shown: "Reading additional input from stdin...\n[1]\nnull\n",
		},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1 << 20, 7, 1} {
			shown, res := parseCodex(tt.input, chunk, now)
			if shown != tt.shown {
				t.Errorf("%s (chunks of %d): shown %q, want %q", tt.name, chunk, shown, tt.shown)
			}
			if !codexSameResult(res, tt.res) {
				t.Errorf("%s (chunks of %d): result %s, want %s", tt.name, chunk, codexDescribe(res), codexDescribe(tt.res))
			}
		}
	}
}

func TestCodexFinalMessageBounded(t *testing.T) {
	text := strings.Repeat("é", MaxFinalMessage) + "<ralph>done</ralph>"
	input := `{"type":"item.completed","item":{"type":"agent_message","text":"` + text + `"}}` + "\n" + `{"type":"turn.completed"}` + "\n"
	var shown bytes.Buffer
	r := newCodexReader(&shown, time.Now)
	r.Write([]byte(input))
	var res Result
	r.finish(&res)
	if len(res.FinalMessage) > MaxFinalMessage {
		t.Errorf("len(FinalMessage) = %d, want at most %d", len(res.FinalMessage), MaxFinalMessage)
	}
	if !strings.HasSuffix(res.FinalMessage, "<ralph>done</ralph>") || !utf8.ValidString(res.FinalMessage) {
		t.Errorf("FinalMessage is not the valid tail of the message")
	}
}

func TestCodexHugeLine(t *testing.T) {
	var shown bytes.Buffer
	r := newCodexReader(&shown, time.Now)
	flood := bytes.Repeat([]byte("x"), 64<<10)
	r.Write([]byte(`{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"`))
	for range (maxLine / len(flood)) + 2 {
		r.Write(flood)
	}
	r.Write([]byte("\"}}\n" + `{"type":"item.completed","item":{"type":"agent_message","text":"after the flood"}}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":2}}`))
	var res Result
	r.finish(&res)
	if res.FinalMessage != "after the flood" || res.InputTokens != 1 || res.OutputTokens != 2 {
		t.Errorf("result %+v; want the lines after the long one read", res)
	}
	if !strings.HasPrefix(shown.String(), "[ralph: passed over an output line of ") {
		t.Errorf("view = %q; want the long line reported", shown.String())
	}
	if r.lines.Held() > 2*maxLine {
		t.Errorf("line buffer grew to %d bytes for a limit of %d", r.lines.Held(), maxLine)
	}
}

func TestCodexPreset(t *testing.T) {
	p, ok := LookupPreset("codex")
	if !ok {
		t.Fatal("no codex preset")
	}
	if p.Format != CodexJSON || !p.PromptArg {
		t.Errorf("codex preset = %+v; want CodexJSON with the prompt as an argument", p)
	}
	if _, ok := readers[CodexJSON]; !ok {
		t.Error("no reader for CodexJSON")
	}
}

func FuzzCodex(f *testing.F) {
	for _, name := range []string{"tools.jsonl", "rate-limit.jsonl", "usage-limit.jsonl", "blocked.jsonl", "stopped.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", "codex", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"item.completed","item":{"type":"command_execution","exit_code":1e400,"changes":7,"items":"x"}}`))
	f.Add([]byte(`{"type":"item.started","item":{"type":"mcp_tool_call","arguments":[1,{}],"error":"x"}}`))
	f.Add([]byte(`{"type":"turn.failed","error":null}` + "\n" + `{"type":"turn.completed","usage":null}`))
	f.Add([]byte(`{"type":"item.started","item":{"type":"command_execution","command":"sh -c '\\"}}`))
	f.Add([]byte("not json\n{\"type\":"))
	f.Fuzz(func(t *testing.T, input []byte) {
		r := newCodexReader(io.Discard, time.Now)
		r.Write(input)
		r.Write([]byte("\n"))
		r.Write(input) // and once without a newline
		var res Result
		r.finish(&res)
		if len(res.FinalMessage) > MaxFinalMessage {
			t.Errorf("len(FinalMessage) = %d, over %d", len(res.FinalMessage), MaxFinalMessage)
		}
		if res.Problem != nil && len(res.Problem.Message) > maxSummary {
			t.Errorf("problem message is %d bytes, over %d", len(res.Problem.Message), maxSummary)
		}
		if s := codexUnwrapShell(string(input)); len(s) > len(input) {
			t.Errorf("unwrapShell grew %q to %q", input, s)
		}
	})
}
