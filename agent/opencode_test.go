package agent

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// parseOpenCode feeds `opencode run --format json` output to an
// openCodeReader in chunks of the given size and returns what it shows and
// what it found.
func parseOpenCode(input string, chunk int) (string, Result) {
	var shown bytes.Buffer
	r := newOpenCodeReader(&shown, time.Now)
	for s := input; len(s) > 0; {
		n := min(chunk, len(s))
		r.Write([]byte(s[:n]))
		s = s[n:]
	}
	var res Result
	r.finish(&res)
	return shown.String(), res
}

// sameOpenCodeResult compares what the reader fills in, the cost within
// rounding.
func sameOpenCodeResult(got, want Result) bool {
	gp, wp := got.Problem, want.Problem
	got.Problem, want.Problem = nil, nil
	if math.Abs(got.CostUSD-want.CostUSD) > 1e-12 {
		return false
	}
	got.CostUSD = want.CostUSD
	if got != want {
		return false
	}
	if gp == nil || wp == nil {
		return gp == wp
	}
	return gp.Kind == wp.Kind && gp.Message == wp.Message && gp.ResetAt.Equal(wp.ResetAt)
}

func showOpenCodeResult(r Result) string {
	s := fmt.Sprintf("final=%q in=%d out=%d cost=%g known=%v apierror=%v",
		r.FinalMessage, r.InputTokens, r.OutputTokens, r.CostUSD, r.CostKnown, r.APIError)
	if p := r.Problem; p != nil {
		s += fmt.Sprintf(" problem=%s %q", p.Kind, p.Message)
		if !p.ResetAt.IsZero() {
			s += " until " + p.ResetAt.UTC().Format(time.RFC3339Nano)
		}
	}
	return s
}

// The transcripts in testdata/opencode were captured from opencode 1.18.33
// (opencode run --format json --auto, the prompt on stdin) run against
// internal/fakemodel's Chat Completions dialect by e2e's
// TestOpenCodeCapture. opencode retries a 429 or a 500 five times, each after
// the retry-after the server sent, before it gives up with an error event
// and exit status 1.
func TestOpenCodeTranscripts(t *testing.T) {
	tools, err := os.ReadFile(filepath.Join("testdata", "opencode", "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The same run stopped before its last step finished: the final text
	// has been seen, but no step_finish after it.
	cut := bytes.LastIndex(bytes.TrimSuffix(tools, []byte("\n")), []byte("\n"))
	stopped := string(tools[:cut+1])

	const final = "Wrote a.txt and b.txt.\nLearning: a.txt is scratch\n<ralph>done</ralph>"
	tests := []struct {
		name  string
		input string // "" reads testdata/opencode/<name>.jsonl
		res   Result
	}{
		{
			name: "tools",
			// Four steps of 100 input and 20 output tokens, $0.0006 each.
			res: Result{FinalMessage: final, InputTokens: 400, OutputTokens: 80, CostUSD: 0.0024, CostKnown: true},
		},
		{
			name:  "stopped",
			input: stopped,
			res:   Result{InputTokens: 300, OutputTokens: 60, CostUSD: 0.0018, CostKnown: true},
		},
		{
			// The title request failed; the session went on.
			name: "title-fails",
			res:  Result{FinalMessage: "Nothing to do.\n<ralph>done</ralph>", InputTokens: 100, OutputTokens: 20, CostUSD: 0.0006, CostKnown: true},
		},
		{
			name: "ratelimit",
			res: Result{APIError: true, Problem: &Problem{
				Kind:    RateLimited,
				Message: "Rate limit reached for requests. Please try again in 1s. (HTTP 429)",
				// The event's timestamp and the retry-after: 1 header.
				ResetAt: time.UnixMilli(1795261751540).Add(time.Second),
			}},
		},
		{
			name: "server-error",
			res: Result{APIError: true, Problem: &Problem{
				Kind:    Transient,
				Message: "The server had an error while processing your request. Sorry about that! (HTTP 500)",
			}},
		},
		{
			name: "bad-key",
			res: Result{APIError: true, Problem: &Problem{
				Kind:    Permanent,
				Message: "Incorrect API key provided. (HTTP 401)",
			}},
		},
	}
	for _, tt := range tests {
		input := tt.input
		if input == "" {
			b, err := os.ReadFile(filepath.Join("testdata", "opencode", tt.name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			input = string(b)
		}
		for _, chunk := range []int{1 << 20, 100, 1} {
			shown, res := parseOpenCode(input, chunk)
			if !sameOpenCodeResult(res, tt.res) {
				t.Errorf("%s (chunks of %d): result\n%s\nwant\n%s", tt.name, chunk, showOpenCodeResult(res), showOpenCodeResult(tt.res))
			}
			if strings.Contains(shown, `"type"`) {
				t.Errorf("%s: the view shows raw JSON:\n%s", tt.name, shown)
			}
			golden(t, filepath.Join("testdata", "opencode", tt.name+".golden"), shown)
		}
	}
}

// TestOpenCodeRun reads a captured transcript through Run, as ralph does.
func TestOpenCodeRun(t *testing.T) {
	o := script("")
	o.Argv = []string{"cat", filepath.Join("testdata", "opencode", "tools.jsonl")}
	o.Format = OpenCodeJSON
	res := run(t, o)
	if res.FinalMessage != "Wrote a.txt and b.txt.\nLearning: a.txt is scratch\n<ralph>done</ralph>" ||
		res.InputTokens != 400 || res.OutputTokens != 80 || !res.CostKnown || res.Problem != nil {
		t.Errorf("Run = %s", showOpenCodeResult(res))
	}
	shown := o.Output.(*syncBuffer).String()
	for _, line := range []string{
		"Let me look first.\n",
		"→ bash: ls -a && echo hi > a.txt\n",
		"→ read: /tmp/TestOpenCodeCapturerun96598580/001/missing.txt\n  ✗ File not found: /tmp/TestOpenCodeCapturerun96598580/001/missing.txt\n",
		"→ write: /tmp/TestOpenCodeCapturerun96598580/001/b.txt\n",
		"✓ finished: 4 steps, $0.0024\n",
	} {
		if !strings.Contains(shown, line) {
			t.Errorf("Output lacks %q:\n%s", line, shown)
		}
	}
}

func TestOpenCodeEvents(t *testing.T) {
	const (
		stop     = `{"type":"step_finish","part":{"reason":"stop","tokens":{"input":1,"output":2},"cost":0.5}}` + "\n"
		toolStep = `{"type":"step_finish","part":{"reason":"tool-calls","tokens":{"input":1,"output":2}}}` + "\n"
	)
	now := time.UnixMilli(1700000000000)
	tests := []struct {
		name  string
		input string
		shown string
		res   Result
	}{
		{
			name:  "text of a step that called tools is no final message",
			input: `{"type":"step_start"}` + "\n" + `{"type":"text","part":{"text":"<ralph>done</ralph>"}}` + "\n" + toolStep,
			shown: "<ralph>done</ralph>\n",
			res:   Result{InputTokens: 1, OutputTokens: 2},
		},
		{
			name: "a new step after the last text takes the claim away",
			input: `{"type":"text","part":{"text":"first"}}` + "\n" + stop +
				`{"type":"step_start"}` + "\n",
			shown: "first\n✓ finished: 1 step, $0.5000\n",
			res:   Result{InputTokens: 1, OutputTokens: 2, CostUSD: 0.5, CostKnown: true},
		},
		{
			name:  "the last text wins",
			input: `{"type":"text","part":{"text":"one\n"}}` + "\n" + `{"type":"text","part":{"text":"two"}}` + "\n" + stop,
			shown: "one\ntwo\n✓ finished: 1 step, $0.5000\n",
			res:   Result{FinalMessage: "two", InputTokens: 1, OutputTokens: 2, CostUSD: 0.5, CostKnown: true},
		},
		{
			name:  "cached and reasoning tokens count",
			input: `{"type":"step_finish","part":{"reason":"length","tokens":{"input":10,"output":5,"reasoning":7,"cache":{"read":100,"write":20}}}}`,
			shown: "✓ finished (length): 1 step\n",
			res:   Result{InputTokens: 130, OutputTokens: 12},
		},
		{
			name:  "fields of the wrong type cost only themselves",
			input: `{"type":"step_finish","part":{"reason":7,"tokens":{"input":"x","output":3,"cache":[]},"cost":"free"}}` + "\n",
			shown: "✓ finished: 1 step\n",
			res:   Result{OutputTokens: 3},
		},
		{
			name:  "tool without input",
			input: `{"type":"tool_use","part":{"tool":"todoread","state":{"status":"completed","input":{}}}}` + "\n",
			shown: "→ todoread\n",
		},
		{
			name:  "tool input without a known field",
			input: `{"type":"tool_use","part":{"tool":"todowrite","state":{"status":"completed","input":{"todos":[{"content":"x"}]}}}}` + "\n",
			shown: `→ todowrite: {"todos":[{"content":"x"}]}` + "\n",
		},
		{
			name:  "tool title when the input says nothing",
			input: `{"type":"tool_use","part":{"tool":"x","state":{"status":"completed","input":{},"title":"did x"}}}` + "\n",
			shown: "→ x: did x\n",
		},
		{
			name:  "failed tool",
			input: `{"type":"tool_use","part":{"tool":"edit","state":{"status":"error","input":{"filePath":"/a.go"},"error":"\noldString not found\nmore"}}}` + "\n",
			shown: "→ edit: /a.go\n  ✗ oldString not found\n",
		},
		{
			name:  "not JSON is shown as it is, reasoning is not",
			input: "Warning: x\r\n[1]\n\n" + `{"type":"reasoning","part":{"text":"hmm"}}` + "\n" + `{"type":"step_start"}`,
			shown: "Warning: x\n[1]\n",
		},
		{
			name:  "retry-after-ms",
			input: `{"type":"error","timestamp":1700000000000,"error":{"name":"APIError","data":{"message":"Too Many Requests","statusCode":429,"responseHeaders":{"Retry-After-Ms":"1500","retry-after":"9"}}}}` + "\n",
			shown: "✗ APIError: Too Many Requests (HTTP 429)\n",
			res: Result{APIError: true, Problem: &Problem{Kind: RateLimited, Message: "Too Many Requests (HTTP 429)",
				ResetAt: now.Add(1500 * time.Millisecond)}},
		},
		{
			name:  "retry-after as a date",
			input: `{"type":"error","timestamp":1700000000000,"error":{"name":"APIError","data":{"message":"slow down","statusCode":429,"responseHeaders":{"retry-after":"Wed, 15 Nov 2023 00:00:00 GMT"}}}}` + "\n",
			shown: "✗ APIError: slow down (HTTP 429)\n",
			res: Result{APIError: true, Problem: &Problem{Kind: RateLimited, Message: "slow down (HTTP 429)",
				ResetAt: time.Date(2023, 11, 15, 0, 0, 0, 0, time.UTC)}},
		},
		{
			name:  "reset from the message when no header says",
			input: `{"type":"error","timestamp":1700000000000,"error":{"name":"APIError","data":{"message":"Rate limit reached. Please try again in 20s.","statusCode":429}}}` + "\n",
			shown: "✗ APIError: Rate limit reached. Please try again in 20s. (HTTP 429)\n",
			res: Result{APIError: true, Problem: &Problem{Kind: RateLimited, Message: "Rate limit reached. Please try again in 20s. (HTTP 429)",
				ResetAt: now.Add(20 * time.Second)}},
		},
		{
			name:  "provider auth error",
			input: `{"type":"error","error":{"name":"ProviderAuthError","data":{"providerID":"fake","message":"no credentials"}}}` + "\n",
			shown: "✗ ProviderAuthError: no credentials\n",
			res:   Result{APIError: true, Problem: &Problem{Kind: Permanent, Message: "no credentials"}},
		},
		{
			name:  "an unknown error is no problem of the service",
			input: `{"type":"error","error":{"name":"UnknownError","data":{"message":"something odd\nat line 2"}}}` + "\n",
			shown: "✗ UnknownError: something odd\n",
			res:   Result{APIError: true},
		},
		{
			name:  "an error without data",
			input: `{"type":"error","error":{"name":"MessageAbortedError"}}` + "\n" + `{"type":"error","error":null}` + "\n",
			shown: "✗ MessageAbortedError\n✗ unknown error\n",
			res:   Result{APIError: true},
		},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1 << 20, 7, 1} {
			shown, res := parseOpenCode(tt.input, chunk)
			if shown != tt.shown {
				t.Errorf("%s (chunks of %d): shown %q, want %q", tt.name, chunk, shown, tt.shown)
			}
			if !sameOpenCodeResult(res, tt.res) {
				t.Errorf("%s (chunks of %d): result\n%s\nwant\n%s", tt.name, chunk, showOpenCodeResult(res), showOpenCodeResult(tt.res))
			}
		}
	}
}

func TestOpenCodeLongLine(t *testing.T) {
	// A final text too long to hold is passed over, and the text before it
	// does not stand in for it.
	input := `{"type":"text","part":{"text":"<ralph>done</ralph>"}}` + "\n" +
		`{"type":"step_finish","part":{"reason":"tool-calls"}}` + "\n" +
		`{"type":"step_start"}` + "\n" +
		`{"type":"text","part":{"text":"` + strings.Repeat("x", maxLine) + `"}}` + "\n" +
		`{"type":"step_finish","part":{"reason":"stop","tokens":{"input":5}}}` + "\n"
	shown, res := parseOpenCode(input, 64<<10)
	if res.FinalMessage != "" || res.InputTokens != 5 {
		t.Errorf("result %s, want no final message and 5 input tokens", showOpenCodeResult(res))
	}
	if !strings.Contains(shown, "passed over an output line of") || len(shown) > 1000 {
		t.Errorf("shown %q, want the long line passed over", shown)
	}
}

func TestOpenCodeFinalMessageBounded(t *testing.T) {
	text := strings.Repeat("é", MaxFinalMessage) + "<ralph>done</ralph>" // 128 KiB of 2-byte runes
	_, res := parseOpenCode(`{"type":"text","part":{"text":"`+text+`"}}`+"\n"+`{"type":"step_finish","part":{"reason":"stop"}}`+"\n", 32<<10)
	if len(res.FinalMessage) > MaxFinalMessage {
		t.Errorf("len(FinalMessage) = %d, want at most %d", len(res.FinalMessage), MaxFinalMessage)
	}
	if !strings.HasSuffix(res.FinalMessage, "<ralph>done</ralph>") || !utf8.ValidString(res.FinalMessage) {
		t.Errorf("FinalMessage is not the valid tail of the text")
	}
}

func TestOpenCodeTokensSaturate(t *testing.T) {
	step := `{"type":"step_finish","part":{"reason":"tool-calls","tokens":{"input":9e18,"output":1e300,"reasoning":-5}}}` + "\n"
	_, res := parseOpenCode(step+step+step, 1<<20)
	if res.InputTokens != math.MaxInt64 || res.OutputTokens != math.MaxInt64 {
		t.Errorf("tokens %d and %d, want both saturated at %d", res.InputTokens, res.OutputTokens, int64(math.MaxInt64))
	}
}

func FuzzOpenCode(f *testing.F) {
	for _, name := range []string{"tools", "ratelimit", "server-error", "bad-key", "title-fails"} {
		b, err := os.ReadFile(filepath.Join("testdata", "opencode", name+".jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte(`{"type":"step_finish","part":{"tokens":{"input":1e400},"cost":-1}}`))
	f.Add([]byte(`{"type":"error","timestamp":-1,"error":{"data":{"statusCode":1e20,"responseHeaders":{"retry-after":"1e308"}}}}`))
	f.Add([]byte(`{"type":"tool_use","part":{"state":null}}`))
	f.Add([]byte("not json\n{\"type\":"))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r := newOpenCodeReader(io.Discard, time.Now)
		r.Write(line)
		r.Write([]byte("\n"))
		r.Write(line) // and once without a newline
		var res Result
		r.finish(&res)
		if len(res.FinalMessage) > MaxFinalMessage {
			t.Errorf("len(FinalMessage) = %d, over %d", len(res.FinalMessage), MaxFinalMessage)
		}
		if res.InputTokens < 0 || res.OutputTokens < 0 || res.CostUSD < 0 || math.IsNaN(res.CostUSD) {
			t.Errorf("negative or undefined counts: %s", showOpenCodeResult(res))
		}
	})
}
