package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ralph-harness/ralph/internal/lines"
	"github.com/ralph-harness/ralph/internal/tail"
)

// geminiReader reads `gemini -o stream-json`: one JSON event per line
// (init; message, for the prompt and for each piece of the model's text as
// it streams; tool_use and tool_result; error, for warnings and errors the
// run survives; and a final result, which has the run's stats but no text).
// It shows a readable view instead of the raw JSON. The final message is
// the model's text after the last tool event, its pieces joined (a reply
// tag may be cut between two); tokens come from the result's stats. The
// result ends the run: what follows it is shown, and changes nothing of
// what the run said (another result is passed over).
type geminiReader struct {
	view
	finalEvent // the result event
	lines      lines.Splitter
	now        func() time.Time // resolves reset times said relative to now

	text      *tail.Buffer // the model's text since the last tool event
	midLine   bool         // the view's last text did not end a line
	lastError string       // the message of the last error event

	gotResult bool
	status    string // the result's status: "success" or "error"
	errMsg    string // the result's error message, else the last error event's
	said      string // the model's text when the result came
	input     int64
	output    int64
}

func newGeminiReader(shown io.Writer, now func() time.Time) *geminiReader {
	r := &geminiReader{view: view{shown}, finalEvent: newFinalEvent(), now: now, text: newGeminiText()}
	r.lines = lines.Splitter{Max: maxLine, Line: r.line, Long: r.longLine}
	return r
}

// newGeminiText holds a little more than MaxFinalMessage, so that the final
// message can still start on a rune boundary.
func newGeminiText() *tail.Buffer { return tail.New(MaxFinalMessage + utf8.UTFMax) }

func (r *geminiReader) Write(p []byte) (int, error) { return r.lines.Write(p) }

func (r *geminiReader) finish(res *Result) {
	r.lines.Flush()
	r.endLine()
	if !r.gotResult {
		// No result (the agent was stopped, or crashed): no final message,
		// and nothing else is trusted to be one.
		return
	}
	res.InputTokens = r.input
	res.OutputTokens = r.output
	if r.status == "error" {
		// The run failed (an API error after gemini's own retries, a fatal
		// tool error, an empty answer): what the model said before is not
		// a final message.
		res.APIError = true
		res.Problem = geminiProblem(r.errMsg, res.ExitCode, r.now())
		return
	}
	res.FinalMessage = lastBytes(r.said, MaxFinalMessage)
}

// geminiProblem classifies a failed run from its error message and exit
// status. gemini exits with the HTTP status of a failed API request
// (modulo 256) and words some errors in ways Classify does not know ("You
// have exhausted your daily quota on this model.", "API key not valid"), so
// the status decides the kind when it tells one: the status of the API's
// own error, when the message quotes it, else the exit status.
func geminiProblem(msg string, exitCode int, now time.Time) *Problem {
	text, status := geminiErrorText(msg)
	kind := geminiStatusKind(status)
	if kind == 0 && exitCode > 128 && exitCode < 256 {
		// The HTTP status less 256. None of the statuses that tell is 128
		// plus a signal that stops a process (130, 137, 143).
		kind = geminiStatusKind(exitCode + 256)
	}
	return classifyAs(text, kind, fmt.Sprintf("gemini exited %d", exitCode), now)
}

// geminiFatal is the problem of a gemini that exited with the status of
// one of its fatal errors, found before any request to the model (a
// failed authentication, bad input, a bad configuration), whatever its
// message's words: only its person can fix it. nil for any other status.
func geminiFatal(exitCode int, stderr string) *Problem {
	what, ok := map[int]string{41: "authentication failed", 42: "bad input", 52: "bad configuration"}[exitCode]
	if !ok {
		return nil
	}
	msg := oneLine(firstLine(stderr))
	if msg == "" {
		msg = "gemini exited " + strconv.Itoa(exitCode)
	}
	return &Problem{Kind: Permanent, Message: fmt.Sprintf("%s (gemini: %s)", msg, what)}
}

// geminiStatusKind maps the HTTP status of a failed API request to a
// problem kind; 0 for any other status.
func geminiStatusKind(status int) ProblemKind {
	switch status {
	case 429:
		return RateLimited
	case 500, 502, 503, 504:
		return Transient
	case 400, 401, 403, 404:
		// A key that is not valid (a 400 for Gemini), no permission, an
		// unknown model.
		return Permanent
	}
	return 0
}

// geminiErrorText makes gemini's API error messages readable. One that
// quotes the API's error body, as most do ("[API Error: {\"error\":
// {\"code\":400,\"message\":\"API key not valid…\",…}}]"), becomes "API
// error 400 INVALID_ARGUMENT: API key not valid…", and status is the quoted
// HTTP status; the others lose their brackets ("[API Error: You have
// exhausted your daily quota on this model.]\nPlease wait…" becomes "API
// error: You have…model.\nPlease wait…") and status is 0.
func geminiErrorText(msg string) (text string, status int) {
	i := strings.Index(msg, `{"error":`)
	if i < 0 {
		rest, ok := strings.CutPrefix(msg, "[API Error: ")
		if !ok {
			return msg, 0
		}
		// The bracket closes at the end of a line.
		for j := 0; j < len(rest); j++ {
			if rest[j] == ']' && (j+1 == len(rest) || rest[j+1] == '\n') {
				rest = rest[:j] + rest[j+1:]
				break
			}
		}
		return "API error: " + rest, 0
	}
	var body struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.NewDecoder(strings.NewReader(msg[i:])).Decode(&body) != nil || body.Error.Message == "" {
		return msg, 0
	}
	e := body.Error
	head := "API error"
	if e.Code != 0 {
		head += " " + strconv.Itoa(e.Code)
	}
	if e.Status != "" {
		head += " " + e.Status
	}
	return head + ": " + e.Message, e.Code
}

// printf ends the model's text first, when it stopped mid-line.
func (r *geminiReader) printf(format string, args ...any) {
	r.endLine()
	r.view.printf(format, args...)
}

// endLine ends the model's text in the view when it stopped mid-line.
func (r *geminiReader) endLine() {
	if r.midLine {
		io.WriteString(r.shown, "\n")
		r.midLine = false
	}
}

func (r *geminiReader) passedOver(event string) {
	r.endLine()
	r.view.passedOver(event)
}

func (r *geminiReader) longLine(n int64) {
	r.endLine()
	r.view.longLine(n)
}

// line handles one line of stdout, without its newline.
func (r *geminiReader) line(b []byte) {
	ev, text := event(b)
	if ev == nil {
		if text != nil {
			r.endLine()
			r.shown.Write(text)
		}
		return
	}
	switch str(ev["type"]) {
	case "init":
		r.started(str(ev["model"]))
	case "message":
		// The user's message is the prompt: not worth showing again.
		if str(ev["role"]) == "assistant" {
			r.message(str(ev["content"]))
		}
	case "tool_use":
		r.text = newGeminiText()
		r.printf("%s\n", toolLine(str(ev["tool_name"]), toolSummary(ev["parameters"])))
	case "tool_result":
		r.text = newGeminiText()
		r.toolResult(ev)
	case "error":
		msg := str(ev["message"])
		if str(ev["severity"]) == "warning" {
			r.printf("✗ warning: %s\n", oneLine(firstLine(msg)))
			return
		}
		r.lastError = msg
		r.printf("✗ %s\n", oneLine(firstLine(msg)))
	case "result":
		if r.gotResult {
			// Not the run's: it ended at its first result. Something it
			// left running printed this one.
			r.passedOver("result")
			return
		}
		r.result(ev)
	}
	// Future event types are not shown.
}

// message shows a piece of the model's text as it comes and keeps it for
// the final message.
func (r *geminiReader) message(text string) {
	if text == "" {
		return
	}
	io.WriteString(r.shown, text)
	r.midLine = !strings.HasSuffix(text, "\n")
	r.text.Write([]byte(text))
}

// toolResult shows the tool results that failed; successful ones are too
// long and too many to be worth a line each.
func (r *geminiReader) toolResult(ev map[string]json.RawMessage) {
	if str(ev["status"]) != "error" {
		return
	}
	var e struct {
		Message string `json:"message"`
	}
	json.Unmarshal(ev["error"], &e)
	msg := e.Message
	if msg == "" {
		msg = str(ev["output"])
	}
	if msg == "" {
		msg = "the tool failed"
	}
	r.printf("  ✗ %s\n", oneLine(firstLine(msg)))
}

func (r *geminiReader) result(ev map[string]json.RawMessage) {
	r.end()
	r.gotResult = true
	r.status = str(ev["status"])
	var e struct {
		Message string `json:"message"`
	}
	json.Unmarshal(ev["error"], &e)
	r.errMsg = e.Message
	if r.errMsg == "" {
		r.errMsg = r.lastError
	}
	// The text is taken now: what the model seems to say after the
	// result is not the run's.
	r.said = r.text.String()
	var stats struct {
		Total     int64 `json:"total_tokens"`
		Input     int64 `json:"input_tokens"`
		Output    int64 `json:"output_tokens"`
		ToolCalls int64 `json:"tool_calls"`
	}
	json.Unmarshal(ev["stats"], &stats)
	r.input = AddTokens(0, stats.Input)
	// The total also counts the model's thinking, which is billed as
	// output but not in output_tokens.
	r.output = AddTokens(0, stats.Output)
	if stats.Total > r.input {
		r.output = max(r.output, stats.Total-r.input)
	}

	if r.status == "error" {
		text, _ := geminiErrorText(r.errMsg)
		if msg := oneLine(firstLine(text)); msg != "" {
			r.printf("✗ result: %s\n", msg)
		} else {
			r.printf("✗ result: error\n")
		}
		return
	}
	calls := "tool calls"
	if stats.ToolCalls == 1 {
		calls = "tool call"
	}
	r.printf("✓ result: %d %s, %d input + %d output tokens\n", stats.ToolCalls, calls, r.input, r.output)
}
