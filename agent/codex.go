package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ralph-harness/ralph/internal/lines"
)

// codexMaxShownItems bounds the items remembered between their start and their
// completion; Codex runs them one or a few at a time.
const codexMaxShownItems = 1024

// codexReader reads `codex exec --json`: one JSON event per line
// (thread.started, turn.started, item.started/updated/completed for the
// agent's messages, commands, file changes and tool calls, error, and a
// final turn.completed or turn.failed). It shows a readable view instead of
// the raw JSON. The final message is the last agent_message item completed
// in a turn that completed; tokens come from the turn.completed's usage,
// however the run ends. The first turn.completed or turn.failed ends the
// run: what follows it is shown, and changes nothing of what the run said
// (another such event is passed over).
type codexReader struct {
	view
	finalEvent // turn.completed or turn.failed: codex runs one turn per exec
	lines      lines.Splitter
	now        func() time.Time // resolves reset times said relative to now

	shownItems map[string]bool // ids of items whose call line was shown at their start (at most codexMaxShownItems)

	turn codexTurn // the turn under way, or the one that ended the run
}

// codexTurn is what a turn said.
type codexTurn struct {
	lastMessage string // the text of the last completed agent_message
	completed   bool   // the turn ended with turn.completed
	input       int64
	output      int64
	failed      string // the message of a turn.failed; "" if none
	gotFailed   bool
}

// over reports whether the run ended: its turn completed or failed, and
// is its last.
func (r *codexReader) over() bool { return r.turn.completed || r.turn.gotFailed }

func newCodexReader(shown io.Writer, now func() time.Time) *codexReader {
	r := &codexReader{view: view{shown}, finalEvent: newFinalEvent(), now: now, shownItems: map[string]bool{}}
	r.lines = lines.Splitter{Max: maxLine, Line: r.line, Long: r.longLine}
	return r
}

func (r *codexReader) Write(p []byte) (int, error) { return r.lines.Write(p) }

func (r *codexReader) finish(res *Result) {
	r.lines.Flush()
	// The tokens of the turns that completed were spent, whether or not
	// a later turn did: a run stopped or failed midway keeps them, for
	// loop.max_tokens. Codex says nothing of a turn's usage before its
	// end, so a turn cut short counts for nothing.
	t := r.turn
	res.InputTokens = t.input
	res.OutputTokens = t.output
	if t.completed {
		res.FinalMessage = lastBytes(t.lastMessage, MaxFinalMessage)
		return
	}
	if t.gotFailed {
		// The turn failed: whatever the agent said before is not a final
		// message, and the failure is the service's, not the work's.
		res.APIError = true
		res.Problem = codexProblem(t.failed, r.now())
	}
	// No turn end at all (the agent was stopped, or crashed): no final
	// message, and nothing else is trusted to be one.
}

// codexProblem classifies the message of a failed turn. Besides what
// Classify knows, Codex has words of its own: every 5xx answer (after its
// own retries) is "We’re currently experiencing high demand, which may
// cause temporary errors.", a transient error; and a provider whose env_key
// is not set is "Missing environment variable: `NAME`.", which only the
// user can fix.
func codexProblem(msg string, now time.Time) *Problem {
	if p := Classify(msg, now); p != nil {
		return p
	}
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "high demand") || strings.Contains(m, "temporary error"):
		return &Problem{Kind: Transient, Message: oneLine(firstLine(msg))}
	case strings.Contains(m, "missing environment variable"):
		return &Problem{Kind: Permanent, Message: oneLine(firstLine(msg))}
	}
	return nil
}

// line handles one line of stdout, without its newline.
func (r *codexReader) line(b []byte) {
	ev := r.decode(b)
	if ev == nil {
		return
	}
	typ := str(ev["type"])
	if r.over() && (typ == "turn.completed" || typ == "turn.failed") {
		// Not the run's: it ended at its first turn's end. Something it
		// left running printed this one.
		r.passedOver(typ)
		return
	}
	switch typ {
	case "thread.started":
		r.printf("● session started\n")
	case "turn.started":
		if !r.over() {
			r.turn = codexTurn{input: r.turn.input, output: r.turn.output}
		}
	case "item.started":
		r.itemStarted(ev["item"])
	case "item.completed":
		r.itemCompleted(ev["item"])
	case "turn.completed":
		r.turnCompleted(ev)
		r.end()
	case "turn.failed":
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(ev["error"], &e)
		r.turn.gotFailed, r.turn.failed, r.turn.completed = true, e.Message, false
		r.printf("✗ turn failed: %s\n", oneLine(firstLine(e.Message)))
		r.end()
	case "error":
		// Also the notices of the retries Codex makes on its own.
		r.printf("✗ %s\n", oneLine(firstLine(str(ev["message"]))))
	}
	// item.updated (a to-do list ticking) and future event types are not
	// shown: they would only repeat what the completed items show.
}

// codexItem is the item of an item.* event; which fields are set depends
// on its type.
type codexItem struct {
	ID, Type, Status string
	Text             string // agent_message, reasoning
	Message          string // error
	Command          string // command_execution
	AggregatedOutput string
	ExitCode         *int
	Changes          []codexChange // file_change
	Server, Tool     string        // mcp_tool_call
	Arguments        json.RawMessage
	Error            json.RawMessage
	Query            string // web_search
	Items            []struct {
		Text string `json:"text"`
	} // todo_list
}

type codexChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// codexDecodeItem decodes an item field by field, so that one field of an
// unexpected type does not cost the others.
func codexDecodeItem(raw json.RawMessage) (codexItem, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return codexItem{}, false
	}
	var it codexItem
	it.ID = str(fields["id"])
	it.Type = str(fields["type"])
	it.Text = str(fields["text"])
	it.Message = str(fields["message"])
	it.Command = str(fields["command"])
	it.AggregatedOutput = str(fields["aggregated_output"])
	it.Status = str(fields["status"])
	it.Server = str(fields["server"])
	it.Tool = str(fields["tool"])
	it.Query = str(fields["query"])
	it.Arguments = fields["arguments"]
	it.Error = fields["error"]
	var code int
	if json.Unmarshal(fields["exit_code"], &code) == nil && string(fields["exit_code"]) != "null" {
		it.ExitCode = &code
	}
	json.Unmarshal(fields["changes"], &it.Changes)
	json.Unmarshal(fields["items"], &it.Items)
	return it, true
}

// call returns the one-line view of an item that is an action of the
// agent (a command, an edit, a tool call), or "" for other items.
func (it codexItem) call() string {
	switch it.Type {
	case "command_execution":
		return "→ shell: " + oneLine(codexUnwrapShell(it.Command))
	case "file_change":
		var parts []string
		for _, c := range it.Changes {
			parts = append(parts, strings.TrimSpace(c.Kind+" "+c.Path))
		}
		if len(parts) == 0 {
			return "→ edit"
		}
		return "→ edit: " + oneLine(strings.Join(parts, ", "))
	case "mcp_tool_call":
		name := it.Tool
		if it.Server != "" {
			name = it.Server + "." + name
		}
		return toolLine(name, toolSummary(it.Arguments))
	case "web_search":
		if it.Query == "" {
			return "→ web_search"
		}
		return "→ web_search: " + oneLine(it.Query)
	case "todo_list":
		var todo []string
		for _, t := range it.Items {
			todo = append(todo, t.Text)
		}
		return "→ plan: " + oneLine(strings.Join(todo, "; "))
	}
	return ""
}

func (r *codexReader) itemStarted(raw json.RawMessage) {
	it, ok := codexDecodeItem(raw)
	if !ok {
		return
	}
	if line := it.call(); line != "" {
		r.printf("%s\n", line)
		if it.ID != "" {
			if len(r.shownItems) >= codexMaxShownItems {
				// Items that never completed: forgetting them costs at
				// most a call line shown twice.
				clear(r.shownItems)
			}
			r.shownItems[it.ID] = true
		}
	}
}

func (r *codexReader) itemCompleted(raw json.RawMessage) {
	it, ok := codexDecodeItem(raw)
	if !ok {
		return
	}
	switch it.Type {
	case "agent_message":
		if !r.over() {
			r.turn.lastMessage = it.Text
		}
		if it.Text != "" {
			r.showText(it.Text)
		}
		return
	case "error":
		r.printf("✗ %s\n", oneLine(firstLine(it.Message)))
		return
	case "reasoning":
		// The agent's thinking is its own business.
		return
	}
	if line := it.call(); line != "" && !r.shownItems[it.ID] {
		r.printf("%s\n", line)
	}
	delete(r.shownItems, it.ID)
	if it.Status != "failed" && (it.ExitCode == nil || *it.ExitCode == 0) {
		return
	}
	// A failed action: say why in one line.
	var why string
	switch {
	case it.Type == "command_execution" && it.ExitCode != nil:
		why = fmt.Sprintf("exit %d", *it.ExitCode)
		if out := firstLine(it.AggregatedOutput); out != "" {
			why += ": " + out
		}
	case it.Type == "mcp_tool_call":
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(it.Error, &e)
		why = e.Message
	}
	if why == "" {
		why = it.Type + " failed"
	}
	r.printf("  ✗ %s\n", oneLine(why))
}

func (r *codexReader) turnCompleted(ev map[string]json.RawMessage) {
	r.turn.completed, r.turn.gotFailed, r.turn.failed = true, false, ""
	// input_tokens counts the cached input too, and output_tokens the
	// reasoning, as in the OpenAI API's usage. Codex runs one turn per
	// exec, and the run ends with it (codex exec fills the usage from the
	// thread's total token usage, not the turn's).
	// Each count is decoded on its own: one of the wrong type costs only
	// itself.
	var usage map[string]json.RawMessage
	json.Unmarshal(ev["usage"], &usage)
	var input, output int64
	json.Unmarshal(usage["input_tokens"], &input)
	json.Unmarshal(usage["output_tokens"], &output)
	r.turn.input, r.turn.output = AddTokens(0, input), AddTokens(0, output)
	if usage != nil {
		r.printf("✓ turn completed: %d input tokens, %d output tokens\n", r.turn.input, r.turn.output)
	} else {
		r.printf("✓ turn completed\n")
	}
}

// codexUnwrapShell shows `/bin/bash -lc 'echo hi'`, the form Codex reports its
// commands in, as the command itself: `echo hi`.
func codexUnwrapShell(cmd string) string {
	for _, sh := range []string{"/bin/bash", "bash", "/bin/zsh", "zsh", "/bin/sh", "sh"} {
		for _, flag := range []string{" -lc ", " -c "} {
			if rest, ok := strings.CutPrefix(cmd, sh+flag); ok {
				if s, ok := codexUnquote(rest); ok {
					return s
				}
				return rest
			}
		}
	}
	return cmd
}

// codexUnquote undoes the POSIX shell quoting of one word made of
// single-quoted pieces and backslash escapes (the way a quote is written
// inside single quotes); ok is false for anything else.
func codexUnquote(s string) (string, bool) {
	var b strings.Builder
	for len(s) > 0 {
		switch s[0] {
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[end+2:]
		case '\\':
			if len(s) < 2 {
				return "", false
			}
			b.WriteByte(s[1])
			s = s[2:]
		default:
			return "", false
		}
	}
	return b.String(), true
}
