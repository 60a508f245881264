package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxLine bounds one line of stream-json held for parsing. Claude's events
// are far smaller; a longer line (a tool echoing a huge file, say) is passed
// over rather than held whole.
const maxLine = 1 << 20

// maxSummary bounds the one-line summaries of tool calls and errors.
const maxSummary = 200

// claudeReader reads `claude -p --output-format stream-json --verbose`: one
// JSON event per line (system/init, assistant messages, user messages that
// carry tool results, and a final result). It shows a readable view instead
// of the raw JSON and takes the final message, tokens and cost from the last
// result event.
type claudeReader struct {
	shown io.Writer
	lines lineSplitter

	gotResult bool
	final     string
	input     int64
	output    int64
	cost      float64
	costKnown bool
	apiError  bool
}

func newClaudeReader(shown io.Writer) *claudeReader {
	r := &claudeReader{shown: shown}
	r.lines = lineSplitter{max: maxLine, line: r.line, long: r.longLine}
	return r
}

func (r *claudeReader) Write(p []byte) (int, error) { return r.lines.Write(p) }

func (r *claudeReader) finish(res *Result) {
	r.lines.flush()
	if !r.gotResult {
		// No result event (the agent was stopped, or crashed): there is no
		// final message, and nothing else is trusted to be one.
		return
	}
	res.FinalMessage = lastBytes(r.final, MaxFinalMessage)
	res.InputTokens = r.input
	res.OutputTokens = r.output
	res.CostUSD = r.cost
	res.CostKnown = r.costKnown
	res.APIError = r.apiError
}

func (r *claudeReader) printf(format string, args ...any) {
	fmt.Fprintf(r.shown, format, args...)
}

func (r *claudeReader) longLine(n int64) {
	r.printf("[ralph: passed over an output line of %d bytes]\n", n)
}

// line handles one line of stdout, without its newline.
func (r *claudeReader) line(b []byte) {
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	// Fields are decoded one by one, so that one field of an unexpected
	// type does not cost the others (above all the result's).
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(b, &ev); err != nil || ev == nil {
		// Not a JSON object: a warning or a log line, shown as it is.
		r.shown.Write(b)
		r.shown.Write([]byte("\n"))
		return
	}
	switch str(ev["type"]) {
	case "system":
		r.system(ev)
	case "assistant":
		r.assistant(ev)
	case "user":
		r.user(ev)
	case "result":
		r.result(ev)
	}
	// Other events (partial-message stream events, future types) are not
	// shown: they would only repeat what the complete messages show.
}

func (r *claudeReader) system(ev map[string]json.RawMessage) {
	sub := str(ev["subtype"])
	if sub == "init" {
		if model := str(ev["model"]); model != "" {
			r.printf("● session started: %s\n", model)
		} else {
			r.printf("● session started\n")
		}
		return
	}
	if sub != "" {
		r.printf("● %s\n", oneLine(sub))
	}
}

// block is one element of a message's content.
type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
}

// blocks returns the content blocks of an event's message, decoded one by
// one; a plain-string content is returned as a single text block.
func blocks(ev map[string]json.RawMessage) []block {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(ev["message"], &msg) != nil {
		return nil
	}
	return contentBlocks(msg.Content)
}

func contentBlocks(raw json.RawMessage) []block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var raws []json.RawMessage
	if json.Unmarshal(raw, &raws) != nil {
		return nil
	}
	var bs []block
	for _, rb := range raws {
		var b block
		if json.Unmarshal(rb, &b) == nil {
			bs = append(bs, b)
		}
	}
	return bs
}

func (r *claudeReader) assistant(ev map[string]json.RawMessage) {
	for _, b := range blocks(ev) {
		switch b.Type {
		case "text":
			if b.Text == "" {
				continue
			}
			io.WriteString(r.shown, b.Text)
			if !strings.HasSuffix(b.Text, "\n") {
				r.printf("\n")
			}
		case "tool_use":
			name := b.Name
			if name == "" {
				name = "tool"
			}
			if s := toolSummary(b.Input); s != "" {
				r.printf("→ %s: %s\n", oneLine(name), s)
			} else {
				r.printf("→ %s\n", oneLine(name))
			}
		}
		// Thinking blocks are the agent's own business.
	}
}

// user shows the tool results that failed; successful ones are too long and
// too many to be worth a line each.
func (r *claudeReader) user(ev map[string]json.RawMessage) {
	for _, b := range blocks(ev) {
		if b.Type != "tool_result" || !b.IsError {
			continue
		}
		var text string
		for _, c := range contentBlocks(b.Content) {
			if c.Type == "text" && c.Text != "" {
				text = c.Text
				break
			}
		}
		r.printf("  ✗ %s\n", oneLine(firstLine(text)))
	}
}

func (r *claudeReader) result(ev map[string]json.RawMessage) {
	r.gotResult = true
	r.final = str(ev["result"])
	r.apiError = false
	json.Unmarshal(ev["is_error"], &r.apiError)
	var usage struct {
		Input         int64 `json:"input_tokens"`
		Output        int64 `json:"output_tokens"`
		CacheCreation int64 `json:"cache_creation_input_tokens"`
		CacheRead     int64 `json:"cache_read_input_tokens"`
	}
	json.Unmarshal(ev["usage"], &usage)
	r.input = usage.Input + usage.CacheCreation + usage.CacheRead
	r.output = usage.Output
	var cost *float64
	if json.Unmarshal(ev["total_cost_usd"], &cost) != nil {
		cost = nil
	}
	r.costKnown = cost != nil
	r.cost = 0
	if cost != nil {
		r.cost = *cost
	}

	var line strings.Builder
	if r.apiError {
		line.WriteString("✗ result")
	} else {
		line.WriteString("✓ result")
	}
	if sub := str(ev["subtype"]); sub != "" && sub != "success" {
		fmt.Fprintf(&line, " (%s)", oneLine(sub))
	}
	var parts []string
	var turns int64
	if json.Unmarshal(ev["num_turns"], &turns) == nil {
		if turns == 1 {
			parts = append(parts, "1 turn")
		} else {
			parts = append(parts, fmt.Sprintf("%d turns", turns))
		}
	}
	if r.costKnown {
		parts = append(parts, fmt.Sprintf("$%.4f", r.cost))
	}
	if len(parts) > 0 {
		line.WriteString(": " + strings.Join(parts, ", "))
	}
	if r.apiError && r.final != "" {
		line.WriteString(" — " + oneLine(firstLine(r.final)))
	}
	r.printf("%s\n", line.String())
}

// summaryKeys are the tool input fields that say best what a call does, most
// telling first: Bash's command, the file of Read/Edit/Write, Grep's and
// Glob's pattern, WebFetch's url, Task's description.
var summaryKeys = []string{"command", "file_path", "notebook_path", "pattern", "path", "url", "query", "description", "prompt"}

// toolSummary renders a tool call's input on one line.
func toolSummary(input json.RawMessage) string {
	if len(input) == 0 {
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) == nil {
		for _, k := range summaryKeys {
			if s := str(fields[k]); s != "" {
				return oneLine(s)
			}
		}
		if len(fields) == 0 {
			return ""
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, input) != nil {
		return oneLine(string(input))
	}
	return oneLine(compact.String())
}

// str decodes a JSON string, or returns "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimLeft(s, " \t\r\n")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// oneLine collapses whitespace (newlines included) to single spaces and cuts
// the result to maxSummary bytes, so a summary stays on one terminal line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxSummary {
		return s
	}
	const ellipsis = "…"
	cut := maxSummary - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// lastBytes returns the last n bytes of s at most, starting on a rune
// boundary.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}

// lineSplitter cuts a stream into lines without ever holding more than max
// bytes of one line: a longer line is passed over, and only its length is
// reported.
type lineSplitter struct {
	max  int
	line func([]byte)  // a complete line, without its newline; only valid during the call
	long func(n int64) // a line of n bytes was too long to keep
	buf  []byte        // the current line so far
	skip int64         // > 0: the current line is being passed over; its length so far
}

func (s *lineSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.add(p)
			break
		}
		s.add(p[:i])
		s.end()
		p = p[i+1:]
	}
	return n, nil
}

func (s *lineSplitter) add(p []byte) {
	switch {
	case s.skip > 0:
		s.skip += int64(len(p))
	case len(s.buf)+len(p) > s.max:
		s.skip = int64(len(s.buf) + len(p))
		s.buf = s.buf[:0]
	default:
		s.buf = append(s.buf, p...)
	}
}

func (s *lineSplitter) end() {
	if s.skip > 0 {
		s.long(s.skip)
		s.skip = 0
		return
	}
	s.line(s.buf)
	s.buf = s.buf[:0]
}

// flush ends a last line that had no newline.
func (s *lineSplitter) flush() {
	if len(s.buf) > 0 || s.skip > 0 {
		s.end()
	}
}
