package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/internal/lines"
	"github.com/ralph-harness/ralph/internal/retryafter"
)

// openCodeReader reads `opencode run --format json`: one JSON event per line,
// each {"type", "timestamp", "sessionID", ...}. A "part" carries the
// session's message parts as they complete: step_start and step_finish
// around each model call (step_finish with the step's tokens and cost),
// text, tool_use (a tool call that completed or failed) and, with
// --thinking, reasoning. An "error" event carries the session's error.
//
// There is no closing event: the final message is the last text part,
// provided the last step finished for a reason other than calling tools, so
// that an agent stopped midway claims nothing. Such a step ends the run
// unless another starts (lastEvent): opencode run may hang on after it,
// on an MCP server, say, and is then stopped with its claim kept. Tokens
// and cost are the sums over all step_finish parts.
type openCodeReader struct {
	view
	*lastEvent
	lines lines.Splitter
	now   func() time.Time // resolves relative reset times when an error event has no time

	text      string // the last text part
	finished  bool   // the last step finished, and not to call tools
	steps     int
	input     int64
	output    int64
	cost      float64
	costKnown bool
	errored   bool
	problem   *Problem
}

func newOpenCodeReader(shown io.Writer, now func() time.Time) *openCodeReader {
	r := &openCodeReader{view: view{shown}, lastEvent: newLastEvent(), now: now}
	r.lines = lines.Splitter{Max: maxLine, Line: r.line, Long: r.longLine}
	return r
}

func (r *openCodeReader) Write(p []byte) (int, error) { return r.lines.Write(p) }

func (r *openCodeReader) finish(res *Result) {
	r.lines.Flush()
	if r.finished {
		res.FinalMessage = lastBytes(r.text, MaxFinalMessage)
	}
	res.InputTokens = r.input
	res.OutputTokens = r.output
	res.CostUSD = r.cost
	res.CostKnown = r.costKnown
	res.APIError = r.errored
	res.Problem = r.problem
}

func (r *openCodeReader) longLine(n int64) {
	r.view.longLine(n)
	// The line may have been the final text: no earlier text may stand in
	// for it.
	r.text = ""
	r.finished = false
	r.reopen()
}

// line handles one line of stdout, without its newline.
func (r *openCodeReader) line(b []byte) {
	ev := r.decode(b)
	if ev == nil {
		return
	}
	var part map[string]json.RawMessage
	json.Unmarshal(ev["part"], &part)
	switch str(ev["type"]) {
	case "step_start":
		r.finished = false
		r.reopen()
	case "text":
		r.textPart(part)
	case "tool_use":
		r.toolUse(part)
	case "step_finish":
		r.stepFinish(part)
	case "error":
		r.sessionError(ev)
	}
	// reasoning (only with --thinking) is the agent's own business; other
	// types are future ones.
}

func (r *openCodeReader) textPart(part map[string]json.RawMessage) {
	text := str(part["text"])
	r.text = text
	if strings.TrimSpace(text) == "" {
		return
	}
	r.showText(text)
}

// openCodeSummaryKeys are the tool input fields that say best what a call
// does: bash's command, the file of read/write/edit, glob's and grep's
// pattern, webfetch's url, task's description, skill's name.
var openCodeSummaryKeys = []string{"command", "filePath", "pattern", "path", "url", "query", "description", "prompt", "name"}

func (r *openCodeReader) toolUse(part map[string]json.RawMessage) {
	name := str(part["tool"])
	if name == "" {
		name = "tool"
	}
	var state map[string]json.RawMessage
	json.Unmarshal(part["state"], &state)
	summary := ""
	var input map[string]json.RawMessage
	if json.Unmarshal(state["input"], &input) == nil {
		for _, k := range openCodeSummaryKeys {
			if s := str(input[k]); s != "" {
				summary = oneLine(s)
				break
			}
		}
	}
	if summary == "" {
		summary = oneLine(str(state["title"]))
	}
	if summary == "" && len(input) > 0 {
		summary = toolSummary(state["input"])
	}
	r.printf("%s\n", toolLine(name, summary))
	if str(state["status"]) == "error" {
		msg := firstLine(str(state["error"]))
		if msg == "" {
			msg = "failed"
		}
		r.printf("  ✗ %s\n", oneLine(msg))
	}
}

func (r *openCodeReader) stepFinish(part map[string]json.RawMessage) {
	r.steps++
	var tokens struct {
		Input     json.RawMessage `json:"input"`
		Output    json.RawMessage `json:"output"`
		Reasoning json.RawMessage `json:"reasoning"`
		Cache     struct {
			Read  json.RawMessage `json:"read"`
			Write json.RawMessage `json:"write"`
		} `json:"cache"`
	}
	json.Unmarshal(part["tokens"], &tokens)
	// opencode counts input without the cached tokens, and output without
	// the reasoning: ralph counts all that the model read and wrote.
	r.input = openCodeAddTokens(r.input, tokens.Input, tokens.Cache.Read, tokens.Cache.Write)
	r.output = openCodeAddTokens(r.output, tokens.Output, tokens.Reasoning)
	if cost, ok := openCodeNumber(part["cost"]); ok && cost >= 0 {
		r.cost += cost
		r.costKnown = true
	}
	reason := str(part["reason"])
	r.finished = reason != "tool-calls"
	if !r.finished {
		return
	}
	r.end()
	var line strings.Builder
	line.WriteString("✓ finished")
	if reason != "" && reason != "stop" {
		fmt.Fprintf(&line, " (%s)", oneLine(reason))
	}
	if r.steps == 1 {
		line.WriteString(": 1 step")
	} else {
		fmt.Fprintf(&line, ": %d steps", r.steps)
	}
	if r.costKnown {
		fmt.Fprintf(&line, ", $%.4f", r.cost)
	}
	r.printf("%s\n", line.String())
}

// sessionError reads a session error: {"name", "data": {"message", "statusCode",
// "isRetryable", "responseHeaders", ...}}.
func (r *openCodeReader) sessionError(ev map[string]json.RawMessage) {
	r.errored = true
	var e struct {
		Name string          `json:"name"`
		Data json.RawMessage `json:"data"`
	}
	json.Unmarshal(ev["error"], &e)
	var data map[string]json.RawMessage
	json.Unmarshal(e.Data, &data)
	msg := str(data["message"])
	if msg == "" {
		msg = e.Name
	}
	if msg == "" {
		msg = "unknown error"
	}
	text := msg
	status, hasStatus := openCodeNumber(data["statusCode"])
	if hasStatus && status >= 100 && status < 1000 {
		text = fmt.Sprintf("%s (HTTP %d)", msg, int(status))
	}
	switch {
	case e.Name == "" || e.Name == msg:
		r.printf("✗ %s\n", oneLine(firstLine(text)))
	default:
		r.printf("✗ %s: %s\n", oneLine(e.Name), oneLine(firstLine(text)))
	}

	// The time the error was seen, from the event itself, resolves a
	// relative reset.
	now := r.now()
	if ms, ok := openCodeNumber(ev["timestamp"]); ok && ms > 0 && ms < 1e15 {
		now = time.UnixMilli(int64(ms))
	}
	var headers map[string]string
	json.Unmarshal(data["responseHeaders"], &headers)
	p := Classify(text, now)
	if p == nil && e.Name == "ProviderAuthError" {
		p = &Problem{Kind: Permanent, Message: oneLine(firstLine(text))}
	}
	if p != nil && p.Kind == RateLimited {
		if t, ok := openCodeRetryAfter(headers, now); ok {
			p.ResetAt = t
		}
	}
	if p != nil {
		r.problem = p
	}
}

// openCodeRetryAfter reads when a rate limit lifts from the response
// headers that opencode passes on: retry-after-ms, or retry-after in seconds
// or as an HTTP date (see retryafter.Parse).
func openCodeRetryAfter(headers map[string]string, now time.Time) (time.Time, bool) {
	get := func(k string) string {
		for hk, v := range headers {
			if strings.EqualFold(hk, k) {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	for _, name := range []string{"retry-after-ms", "retry-after"} {
		if t, ok := retryafter.Parse(name, get(name), now); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// openCodeNumber decodes a JSON number, or reports false for anything else.
func openCodeNumber(raw json.RawMessage) (float64, bool) {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// openCodeAddTokens adds token counts to sum, skipping what is not a count
// and saturating rather than overflowing.
func openCodeAddTokens(sum int64, counts ...json.RawMessage) int64 {
	for _, raw := range counts {
		f, ok := openCodeNumber(raw)
		if !ok || f <= 0 {
			continue
		}
		if f >= math.MaxInt64 {
			return math.MaxInt64
		}
		sum = AddTokens(sum, int64(f))
	}
	return sum
}
